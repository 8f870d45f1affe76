package robustness

import (
	"time"

	"google.golang.org/grpc/codes"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// PushKind is how a push reached the hub.
type PushKind string

const (
	// PushUnary is a raw PushConfig call.
	PushUnary PushKind = "unary"
	// PushUpload is an UploadConfig stream through api/hubclient.
	PushUpload PushKind = "upload"
)

// Push is one recorded push: the request, when it was sent and answered,
// and the answer.
type Push struct {
	Pusher int
	Stream string
	// Content names the configuration's bytes (its marker); Hash is their
	// hub hash (hex SHA-256), known before the push.
	Content  string
	Hash     string
	Kind     PushKind
	Expected uint64 // expected_generation sent (0: none)
	Call     time.Time
	Return   time.Time
	// The answer: Code OK with Gen, AckHash and Unchanged, or an error.
	Code      codes.Code
	Err       string
	Gen       uint64
	AckHash   string
	Unchanged bool
}

// Acked reports whether the hub acknowledged the push.
func (p Push) Acked() bool { return p.Code == codes.OK }

// Observation is what the hub held for one stream when it was read back
// after a restart: its current generation and hash (GetConfig) and the
// recent generations' hashes (GetStatus).
type Observation struct {
	Gen         uint64
	Hash        string
	Generations map[uint64]string
}

// Restart is one kill -9 of the hub and what the restarted hub serves.
type Restart struct {
	Killed  time.Time
	Streams map[string]Observation
}

// WatchSession is one WatchStatus call of a watcher: the revision it
// resumed from (0: a fresh start), every message it received, in order,
// and when it ended.
type WatchSession struct {
	Watcher int
	Stream  string
	From    uint64
	Events  []*confighubv1.WatchStatusResponse
	End     time.Time
}

// Load is one POST /config an emulated gateway received, in arrival order:
// the content it carried (the marker in its body), the emulator's hash of
// the body and the answer's status (0: dropped or abandoned).
type Load struct {
	Content string
	EmuHash string
	Status  int
}

// Loaded reports whether the gateway runs the request's configuration
// afterwards (201 loaded, 304 unchanged).
func (l Load) Loaded() bool { return l.Status == 201 || l.Status == 304 }

// GatewayFinal is an emulated gateway at the end: the emulator's
// configuration_hash and the content marker of its loaded configuration.
type GatewayFinal struct {
	Hash    string
	Content string
}

// WatcherFinal is a watcher's last session beside the GetStatus answer
// read once the fleet settled.
type WatcherFinal struct {
	Stream string
	Status *confighubv1.GetStatusResponse
}

// History is everything a run recorded, the input of Check.
type History struct {
	Pushes   []Push
	Restarts []Restart
	Watches  []WatchSession
	// Loads per gateway; GatewayStream names each gateway's stream (the
	// gateway and its sink share the name).
	Loads         map[string][]Load
	GatewayStream map[string]string
	// Final: per stream the GetStatus answer once settled, per gateway its
	// state, per watcher its view beside GetStatus.
	FinalStatus   map[string]*confighubv1.GetStatusResponse
	FinalGateways map[string]GatewayFinal
	FinalWatchers map[int]WatcherFinal
}
