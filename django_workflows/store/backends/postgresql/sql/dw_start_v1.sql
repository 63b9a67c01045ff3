CREATE OR REPLACE FUNCTION dw_start_v1(varchar, varchar, integer, varchar, jsonb, jsonb, jsonb, jsonb, timestamptz, timestamptz, integer, varchar, varchar, varchar, varchar, timestamptz, varchar, varchar, varchar, integer, varchar, varchar, timestamptz, boolean, boolean, text, boolean, boolean, boolean, boolean, integer, varchar, integer, varchar, timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
INSERT INTO django_workflows_workflowinstance (id, workflow, version, status, input, output, error, custom_status, wake_at, deadline, priority, queue, parent_id, parent_close, schedule_id, scheduled_at, concurrency_key, rate_limit_key, fair_key, runs, signal_cursor, lease_token, lease_owner, lease_until, cancel_requested, terminate_requested, cancel_reason, journal_warned, awaited, has_headers, parked, generation, forked_from, subject_type_id, subject_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, (SELECT COALESCE(MAX(id), 0) FROM django_workflows_signal), $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36) ON CONFLICT DO NOTHING;
IF NOT FOUND THEN RETURN false; END IF;
PERFORM pg_notify('django_workflows', '');
RETURN true;
END
$fn$