CREATE PROCEDURE dw_signal_v1(IN p_name {django_workflows_signal.name}, IN p_key {django_workflows_signal.key}, IN p_dedupe_id {django_workflows_signal.dedupe_id}, IN p_payload {django_workflows_signal.payload}, IN p_now {django_workflows_signal.created_at}, IN p_shard {django_workflows_wakeupcounter.shard}) MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
DECLARE v_found BOOLEAN DEFAULT FALSE;
DECLARE v_id BIGINT;
DECLARE v_key {django_workflows_signal.key};
DECLARE v_woken, v_counted BIGINT DEFAULT 0;
DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
START TRANSACTION;
INSERT INTO django_workflows_storelock (name) VALUES ('signals') ON DUPLICATE KEY UPDATE name = name;
IF p_dedupe_id IS NOT NULL THEN
BEGIN
DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
SET v_found = TRUE;
SELECT id, `key` INTO v_id, v_key FROM django_workflows_signal WHERE name = p_name AND dedupe_id = p_dedupe_id FOR UPDATE;
END;
END IF;
IF v_found THEN
COMMIT;
SELECT v_id, 0, FALSE, v_key, 0;
ELSE
INSERT INTO django_workflows_signal (name, `key`, dedupe_id, payload, created_at) VALUES (p_name, p_key, p_dedupe_id, p_payload, p_now);
SET v_id = LAST_INSERT_ID();
IF p_key IS NULL THEN
UPDATE django_workflows_wait w STRAIGHT_JOIN django_workflows_workflowinstance i ON i.id = w.instance_id SET i.wake_at = CASE WHEN i.wake_at IS NULL OR i.wake_at > p_now THEN p_now ELSE i.wake_at END, i.updated_at = p_now WHERE w.`signal` = p_name AND w.`key` IS NULL AND i.status = 'suspended';
ELSE
UPDATE django_workflows_wait w STRAIGHT_JOIN django_workflows_workflowinstance i ON i.id = w.instance_id SET i.wake_at = CASE WHEN i.wake_at IS NULL OR i.wake_at > p_now THEN p_now ELSE i.wake_at END, i.updated_at = p_now WHERE w.`signal` = p_name AND w.`key` = p_key AND i.status = 'suspended';
END IF;
SET v_woken = ROW_COUNT();
COMMIT;
BEGIN
DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET v_counted = 0;
UPDATE django_workflows_wakeupcounter SET `count` = `count` + 1 WHERE shard = p_shard;
SET v_counted = ROW_COUNT();
END;
SELECT v_id, v_woken, TRUE, p_key, v_counted;
END IF;
END
