// Package dataplane emulates Kong data planes in hybrid mode (sync v1) for
// tests, benchmarks and kong-emulator. It is NOT Kong: no real Kong data
// plane runs on the test machines. It follows Kong 3.9's
// kong/clustering/data_plane.lua and config_helper.lua and
// lua-resty-websocket's frame rules (DP and frameTap say which);
// TestFrameRules checks the frame rules, TestConfigHelperRules the update
// rules.
package dataplane
