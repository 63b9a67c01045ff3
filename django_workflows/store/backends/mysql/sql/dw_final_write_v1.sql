CREATE PROCEDURE dw_final_write_v1(IN p_id {django_workflows_workflowinstance.id}, IN p_token {django_workflows_workflowinstance.lease_token}, IN p_name1 {django_workflows_journalentry.name}, IN p_document1 {django_workflows_journalentry.document}, IN p_guarded1 {django_workflows_journalentry.document}, IN p_name2 {django_workflows_journalentry.name}, IN p_document2 {django_workflows_journalentry.document}, IN p_guarded2 {django_workflows_journalentry.document}, IN p_status {django_workflows_workflowinstance.status}, IN p_output {django_workflows_workflowinstance.output}, IN p_error {django_workflows_workflowinstance.error}, IN p_now {django_workflows_workflowinstance.updated_at}) MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
DECLARE v_found BOOLEAN DEFAULT TRUE;
DECLARE v_cancel, v_terminate BOOLEAN;
DECLARE v_reason {django_workflows_workflowinstance.cancel_reason};
DECLARE v_first, v_second {django_workflows_journalentry.document};
DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;
SELECT cancel_requested, terminate_requested, cancel_reason INTO v_cancel, v_terminate, v_reason FROM django_workflows_workflowinstance WHERE id = p_id AND lease_token = p_token FOR UPDATE;
IF v_found THEN
SET v_first = IF(p_guarded1 IS NOT NULL AND NOT (v_cancel OR v_terminate), p_guarded1, p_document1);
SET v_second = IF(p_guarded2 IS NOT NULL AND NOT (v_cancel OR v_terminate), p_guarded2, p_document2);
IF v_first IS NOT NULL AND v_second IS NOT NULL THEN
INSERT INTO django_workflows_journalentry (instance_id, name, document) VALUES (p_id, p_name1, v_first), (p_id, p_name2, v_second) ON DUPLICATE KEY UPDATE document = VALUES(document);
ELSEIF v_first IS NOT NULL THEN
INSERT INTO django_workflows_journalentry (instance_id, name, document) VALUES (p_id, p_name1, v_first) ON DUPLICATE KEY UPDATE document = VALUES(document);
ELSEIF v_second IS NOT NULL THEN
INSERT INTO django_workflows_journalentry (instance_id, name, document) VALUES (p_id, p_name2, v_second) ON DUPLICATE KEY UPDATE document = VALUES(document);
END IF;
UPDATE django_workflows_workflowinstance SET status = p_status, output = p_output, error = p_error, lease_token = NULL, lease_until = NULL, wake_at = NULL, updated_at = p_now WHERE id = p_id;
END IF;
SELECT v_cancel, v_terminate, v_reason FROM DUAL WHERE v_found;
END