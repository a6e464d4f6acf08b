-- The epoch each node leads or last led in its incarnation, as it reports
-- it with its heartbeat (GET /api/v1/nodes, `ctl nodes`, the dashboard's
-- Nodes table). Before, every row showed the lease's current epoch, so a
-- dead leader's row read as if it led the epoch its successor had won.
-- NULL: the node has not led since it started. Written by the nodes' own
-- role, which may already update this table.
ALTER TABLE nodes ADD COLUMN led_epoch BIGINT CHECK (led_epoch > 0);
