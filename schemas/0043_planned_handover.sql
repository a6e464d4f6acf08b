-- Planned handover (docs/operations.md, "Handing leadership over"): a
-- leader that hands over releases its lease naming the node that is to
-- lead next, and for `handover_until` (database time) no other node may
-- campaign. NULL: any node may. A campaign that wins clears both.
ALTER TABLE leader_lease ADD COLUMN handover_to TEXT, ADD COLUMN handover_until TIMESTAMPTZ;
