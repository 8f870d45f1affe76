package hybrid

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// EmptyConfigHash is the hash a data plane reports for a configuration
// with no entities, and before it has one (kong/db/declarative
// DECLARATIVE_EMPTY_CONFIG_HASH): it stores that instead of the hash it
// was sent.
const EmptyConfigHash = "00000000000000000000000000000000"

// ConfigHash is the config_hash a generation is sent with: the first 32 hex
// digits of the hub's content hash (SHA-256 of the configuration), so the
// same configuration has the same hash across restarts and replicas, and a
// data plane that runs it skips the reload. A data plane takes any 32
// characters (kong/clustering/config_helper.lua stores it as it is).
func ConfigHash(cfg *config.Config) string {
	if len(cfg.Hash) >= 32 {
		return cfg.Hash[:32]
	}
	return fmt.Sprintf("%032s", cfg.Hash)
}

// frame is one generation's reconfigure message, gzip'd once and shared by
// every data plane of its stream: the prepared WebSocket frame holds the
// bytes each connection writes as they are.
type frame struct {
	ready chan struct{}
	// key is the configuration's content hash.
	key string
	// sent is the config_hash in the message; expect the hash the data
	// plane reports once it loaded it (EmptyConfigHash for an empty
	// configuration).
	sent, expect string
	// plugins are the plugin names the configuration configures.
	plugins []string
	pm      *websocket.PreparedMessage
	err     error
}

// frames keeps the newest frames of each stream. Guarded by mu.
type frames struct {
	maxPayload int
	log        *slog.Logger
	mu         sync.Mutex
	byStream   map[string][]*frame
	// compressions counts the gzip runs.
	compressions atomic.Uint64
}

// keepFrames per stream: the current generation's and the one before
// (a data plane slow to take up the newest may still be sent it).
const keepFrames = 2

func newFrames(maxPayload int, log *slog.Logger) *frames {
	return &frames{maxPayload: maxPayload, log: log, byStream: map[string][]*frame{}}
}

// get returns cfg's frame, built by the first caller; the others wait for
// it.
func (fs *frames) get(cfg *config.Config) *frame {
	fs.mu.Lock()
	list := fs.byStream[cfg.Stream]
	for _, f := range list {
		if f.key == cfg.Hash {
			fs.mu.Unlock()
			<-f.ready
			return f
		}
	}
	f := &frame{ready: make(chan struct{}), key: cfg.Hash}
	list = append(list, f)
	if len(list) > keepFrames {
		list = list[len(list)-keepFrames:]
	}
	fs.byStream[cfg.Stream] = list
	fs.mu.Unlock()
	fs.build(f, cfg)
	close(f.ready)
	return f
}

// build makes cfg's frame: its scan (plugins, empty or not), its message
// gzip'd (Reconfigure), checked against the max payload.
func (fs *frames) build(f *frame, cfg *config.Config) {
	js, err := cfg.JSON()
	if err != nil {
		f.err = &sink.Error{Code: sink.CodeInvalid, Permanent: true, Message: "the configuration has no JSON form: " + err.Error(), Err: err}
		return
	}
	scan, err := scanConfig(js)
	if err != nil {
		f.err = &sink.Error{Code: sink.CodeInvalid, Permanent: true, Message: "the configuration is not a declarative configuration object: " + err.Error(), Err: err}
		return
	}
	f.sent, f.expect, f.plugins = ConfigHash(cfg), ConfigHash(cfg), scan.plugins
	if scan.empty {
		f.expect = EmptyConfigHash
	}
	gz, raw := reconfigure(cfg, js)
	fs.compressions.Add(1)
	fs.log.Info("reconfigure frame built", "stream", cfg.Stream, "generation", cfg.Generation, "bytes", raw, "compressed_bytes", len(gz))
	if len(gz) > fs.maxPayload {
		f.err = &sink.Error{Code: sink.CodeTooLarge, Permanent: true,
			Message: fmt.Sprintf("the compressed reconfigure frame is %d bytes, over the cluster max payload of %d bytes (a data plane drops a larger frame and reconnects)", len(gz), fs.maxPayload)}
		return
	}
	f.pm, err = websocket.NewPreparedMessage(websocket.BinaryMessage, gz)
	if err != nil {
		f.err = &sink.Error{Code: sink.CodeInternal, Message: "prepare the reconfigure frame: " + err.Error(), Err: err}
	}
}

// Reconfigure is the gzip'd message the hub sends for cfg, and its size
// uncompressed: kong/clustering/control_plane.lua's reconfigure,
// {"type","timestamp","config_table","config_hash"} as JSON. config_table
// is the configuration as pushed (a data plane feeds it to the
// declarative parser POST /config uses). There is no "hashes" field:
// without it a data plane rebuilds everything, which is always right.
func Reconfigure(cfg *config.Config) (gz []byte, raw int, err error) {
	js, err := cfg.JSON()
	if err != nil {
		return nil, 0, err
	}
	gz, raw = reconfigure(cfg, js)
	return gz, raw, nil
}

func reconfigure(cfg *config.Config, js []byte) ([]byte, int) {
	ts := float64(cfg.AcceptTime.UnixMilli()) / 1000
	head := `{"type":"reconfigure","timestamp":` + strconv.FormatFloat(ts, 'f', 3, 64) + `,"config_hash":"` + ConfigHash(cfg) + `","config_table":`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(head)) // writes to a bytes.Buffer do not fail
	_, _ = zw.Write(js)
	_, _ = zw.Write([]byte("}"))
	_ = zw.Close()
	return buf.Bytes(), len(head) + len(js) + 1
}

// configScan is what the hub reads in a configuration before it sends it.
type configScan struct {
	// plugins configured anywhere (top level or nested), sorted, unique.
	plugins []string
	// empty: no entity but workspaces (a data plane then reports
	// EmptyConfigHash).
	empty bool
}

type pluginRef struct {
	Name string `json:"name"`
}

// nested are the entity collections that may hold plugins, and routes
// under services.
type nested struct {
	Plugins []pluginRef `json:"plugins"`
	Routes  []struct {
		Plugins []pluginRef `json:"plugins"`
	} `json:"routes"`
}

func scanConfig(js []byte) (configScan, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return configScan{}, err
	}
	names := map[string]bool{}
	add := func(ps []pluginRef) {
		for _, p := range ps {
			if p.Name != "" {
				names[p.Name] = true
			}
		}
	}
	sc := configScan{empty: true}
	for key, raw := range top {
		if len(key) > 0 && key[0] == '_' || key == "workspaces" {
			continue
		}
		t := bytes.TrimSpace(raw)
		if !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]")) && !bytes.Equal(t, []byte("{}")) {
			sc.empty = false
		}
		switch key {
		case "plugins":
			var ps []pluginRef
			if json.Unmarshal(raw, &ps) == nil {
				add(ps)
			}
		case "services", "routes", "consumers", "consumer_groups":
			var es []nested
			if json.Unmarshal(raw, &es) == nil {
				for _, e := range es {
					add(e.Plugins)
					for _, r := range e.Routes {
						add(r.Plugins)
					}
				}
			}
		}
	}
	for n := range names {
		sc.plugins = append(sc.plugins, n)
	}
	sort.Strings(sc.plugins)
	return sc, nil
}
