// Package dataplane emulates Kong data planes in hybrid mode (sync v1) for
// the hub's tests, benchmarks and demos. It is NOT Kong: no real Kong data
// plane (OpenResty/Lua) runs on the test machines. It follows Kong 3.9's
// kong/clustering/data_plane.lua, config_helper.lua and utils.lua, and
// lua-resty-websocket's client as Kong pins it:
//
//   - dial wss://ADDR/v1/outlet?node_id=&node_hostname=&node_version= (not
//     URL-encoded) with the node's cluster certificate, no subprotocol and
//     no extension; shared mode trusts only that certificate (name
//     kong_clustering), pki mode the cluster CA for cluster_server_name;
//   - send one binary basic_info frame: plugins sorted by name with their
//     versions, labels (cluster_dp_labels), process_conf, filters;
//   - every frame from the hub is checked as lua-resty-websocket reads it:
//     a fragment, an RSV bit or a payload over the max payload ends the
//     connection (frameTap, TestFrameRules);
//   - a binary frame is gunzip'd and JSON-decoded (a failure ends the
//     connection); type reconfigure queues config_table, latest wins;
//     config_table goes through the Admin API emulator's declarative check
//     (kongemu.CheckDeclarative), and a plugin the node lacks is refused;
//   - a loaded configuration's config_hash is what the pings carry from
//     then on (32 zeros before and for an empty configuration; a reload is
//     skipped when the hash is the running one); a ping every 30 s and
//     right after each configuration tried;
//   - a configuration that fails keeps the running one; in Konnect mode it
//     is reported in a {"type":"error","error":{...flattened_errors}} frame;
//   - no frame for 45 s ends the connection; a broken connection is dialled
//     again after 5 to 10 s (both configurable for tests).
//
// Shared lets thousands of nodes in one process check each distinct frame
// once.
package dataplane
