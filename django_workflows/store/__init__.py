"""The store: the only code that writes workflow state. It knows nothing of workflow code."""
