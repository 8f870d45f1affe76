package hybrid

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// rpcSubprotocol is what a data plane with RPC sync on asks for on
// /v2/outlet (kong/clustering/rpc/manager.lua).
const rpcSubprotocol = "kong.meta.v1"

type rpcHello struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
}

// outletV2 answers the RPC hello of a data plane with RPC sync on, offering
// no capability: without kong.sync.v2 such a data plane syncs over
// /v1/outlet (kong/clustering/data_plane.lua), where a failed /v2/outlet
// would leave it retrying. Nothing else is served on it: later frames are
// read and dropped, pings answered, and a silent connection closed.
func (s *Server) outletV2(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) || !strings.Contains(r.Header.Get("Sec-WebSocket-Protocol"), rpcSubprotocol) {
		s.refuse(w, r, http.StatusBadRequest, "/v2/outlet needs the kong.meta.v1 subprotocol")
		return
	}
	conn, err := s.upV2.Upgrade(w, r, nil)
	if err != nil {
		s.log.Warn("data plane refused", "addr", r.RemoteAddr, "path", "/v2/outlet", "reason", err.Error())
		return
	}
	addr := r.RemoteAddr
	ss := s.track(conn)
	if ss == nil {
		return
	}
	defer s.untrack(ss)
	conn.SetReadLimit(int64(s.opts.MaxPayload))
	_ = conn.SetReadDeadline(time.Now().Add(s.opts.PingTimeout))
	conn.SetPingHandler(func(string) error {
		_ = conn.SetReadDeadline(time.Now().Add(s.opts.PingTimeout))
		return conn.WriteControl(websocket.PongMessage, nil, time.Now().Add(writeTimeout))
	})
	_, data, err := conn.ReadMessage()
	var h rpcHello
	if err != nil || json.Unmarshal(data, &h) != nil || h.Method != "kong.meta.v1.hello" {
		s.log.Warn("data plane refused", "addr", addr, "path", "/v2/outlet", "reason", "the first frame is not the kong.meta.v1.hello call")
		closeWith(ss, websocket.CloseUnsupportedData, "hello expected")
		return
	}
	id := h.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	answer := `{"jsonrpc":"2.0","result":{"rpc_capabilities":[],"rpc_frame_encoding":"x-snappy-framed"},"id":` + string(id) + `}`
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := conn.WriteMessage(websocket.BinaryMessage, []byte(answer)); err != nil {
		return
	}
	s.log.Info("data plane RPC hello answered with no capabilities", "addr", addr)
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}
