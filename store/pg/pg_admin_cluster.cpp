// The admin store's reads of the cluster's registries: epochs, nodes and
// workers (pg_admin_store.cpp has the rest of PgAdminStore).
#include "admin_sql.h"
#include "baton/store_pg/pg_admin_store.h"

namespace baton::store::pg {

Result<Page> PgAdminStore::list_epochs(int limit, std::optional<std::int64_t> before_epoch) {
  return page_query(session_,
                    "SELECT e.epoch::text, jsonb_build_object('epoch', e.epoch, 'leader_id', e.leader_id,"
                    " 'leader_incarnation', e.leader_incarnation, 'leader_endpoint', e.leader_endpoint,"
                    " 'elected_at', e.elected_at, 'ended_at', e.ended_at, 'end_reason', e.end_reason,"
                    " 'current', e.epoch = (SELECT epoch FROM leader_lease LIMIT 1))::text"
                    " FROM epoch_history e WHERE ($1::bigint IS NULL OR e.epoch < $1) ORDER BY e.epoch DESC LIMIT $2",
                    limit, before_epoch);
}

Result<Page> PgAdminStore::list_nodes(int limit, std::optional<std::string> after_id) {
  return page_query(session_,
                    // The role as it is, not as the node last said (issue 63): a node
                    // whose heartbeat (every 5 s) is 12 s old, or that said it
                    // leads without holding a live lease, is lost; only the lease's
                    // holder is the leader. `epoch`: the one it leads or last led.
                    "SELECT n.node_id, jsonb_build_object('node_id', n.node_id, 'incarnation', n.incarnation,"
                    " 'endpoint', n.endpoint, 'role', CASE WHEN n.role = 'stopped' THEN 'stopped'"
                    "  WHEN n.last_heartbeat_at < now() - interval '12 seconds' THEN 'lost'"
                    "  WHEN x.leads THEN 'leader' WHEN n.role = 'leader' THEN 'lost' ELSE 'follower' END,"
                    " 'reported_role', n.role, 'started_at', n.started_at,"
                    " 'last_heartbeat_at', n.last_heartbeat_at,"
                    " 'heartbeat_age_ms', floor(extract(epoch FROM now() - n.last_heartbeat_at) * 1000)::bigint,"
                    " 'leads', x.leads, 'epoch', n.led_epoch)::text"
                    " FROM nodes n LEFT JOIN leader_lease l ON l.id = 1 CROSS JOIN LATERAL (SELECT coalesce("
                    "  l.leader_id = n.node_id AND l.leader_incarnation = n.incarnation AND NOT l.released"
                    "  AND l.lease_expires_at > now(), false) AS leads) x"
                    " WHERE ($1::text IS NULL OR n.node_id > $1) ORDER BY n.node_id LIMIT $2",
                    limit, after_id);
}

Result<Page> PgAdminStore::list_workers(int limit, std::optional<std::string> after_id,
                                        std::optional<std::string> only) {
  return page_query(
      session_,
      "SELECT w.worker_id, jsonb_build_object('worker_id', w.worker_id, 'state', w.state,"
      " 'admin_state', w.admin_state, 'labels', w.labels,"
      " 'capacity', w.capacity, 'attached_node_id', w.attached_node_id, 'attached_epoch', w.attached_epoch,"
      " 'attached_at', w.attached_at, 'detached_at', w.detached_at, 'last_heartbeat_at', w.last_heartbeat_at,"
      // A worker's runs are found among the unfinished ones (schemas/0021:
      // no index holds the worker or the state).
      " 'in_flight', (SELECT count(*) FROM job_runs r WHERE r.finished_at IS NULL"
      "   AND r.assigned_worker_id = w.worker_id AND r.state IN ('ASSIGNED', 'RUNNING')),"
      " 'runs', coalesce((SELECT jsonb_agg(jsonb_build_object('id', r.id, 'state', r.state, 'attempt', r.attempt,"
      "   'continuation_state', r.continuation_state) ORDER BY r.id) FROM job_runs r"
      "   WHERE r.finished_at IS NULL AND r.assigned_worker_id = w.worker_id AND r.state IN ('ASSIGNED', 'RUNNING')),"
      " '[]'::jsonb))::text"
      " FROM workers w WHERE ($1::text IS NULL OR w.worker_id > $1) AND ($2::text IS NULL OR w.worker_id = $2)"
      " ORDER BY w.worker_id LIMIT $3",
      limit, after_id, only);
}

}  // namespace baton::store::pg
