CREATE OR REPLACE FUNCTION dw_signal_v1(varchar, varchar, varchar, jsonb, timestamptz) RETURNS TABLE (signal_id bigint, woken bigint, created boolean, signal_key varchar) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  found_id bigint;
  found_key varchar;
  woke bigint;
BEGIN
PERFORM pg_advisory_xact_lock(1146574662, 1);
IF $3 IS NOT NULL THEN
  SELECT s.id, s.key INTO found_id, found_key FROM django_workflows_signal s WHERE s.name = $1 AND s.dedupe_id = $3 FOR UPDATE;
  IF FOUND THEN
    RETURN QUERY SELECT found_id, 0::bigint, false, found_key;
    RETURN;
  END IF;
END IF;
INSERT INTO django_workflows_signal (name, key, dedupe_id, payload, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id INTO found_id;
IF $2 IS NULL THEN
  UPDATE django_workflows_workflowinstance SET wake_at = CASE WHEN wake_at IS NULL OR wake_at > $5 THEN $5 ELSE wake_at END, updated_at = $5 WHERE status = 'suspended' AND id IN (SELECT w.instance_id FROM django_workflows_wait w WHERE w.signal = $1 AND w.key IS NULL);
ELSE
  UPDATE django_workflows_workflowinstance SET wake_at = CASE WHEN wake_at IS NULL OR wake_at > $5 THEN $5 ELSE wake_at END, updated_at = $5 WHERE status = 'suspended' AND id IN (SELECT w.instance_id FROM django_workflows_wait w WHERE w.signal = $1 AND w.key = $2);
END IF;
GET DIAGNOSTICS woke = ROW_COUNT;
PERFORM pg_notify('django_workflows', '');
RETURN QUERY SELECT found_id, woke, true, $2;
END
$fn$
