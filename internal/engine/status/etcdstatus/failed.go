package etcdstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// MaxFailedBody bounds a failed record's body below etcd's default --max-request-bytes.
const MaxFailedBody = 1 << 20

// Failures is where the Writer reads a sink's last failed apply.
type Failures interface {
	LastFailed(sink string) (*config.Config, *sink.Error, bool)
}

// WithFailures makes the Writer copy each sink's last failed apply (not its bytes).
func WithFailures(f Failures) Option { return func(o *options) { o.failures = f } }

// Failed is a sink's last failed apply as a record keeps it.
type Failed struct {
	Stream      string      `json:"stream"`
	Generation  uint64      `json:"generation"`
	Hash        string      `json:"hash"`
	BodyOmitted int         `json:"body_omitted,omitempty"` // bytes cut at MaxFailedBody
	Err         *sink.Error `json:"-"`
}

// failedHead is a failed record's JSON first line; the raw body follows.
type failedHead struct {
	Failed
	Code      sink.Code `json:"code,omitempty"`
	Message   string    `json:"message"`
	Permanent bool      `json:"permanent,omitempty"`
}

func encodeFailed(cfg *config.Config, se *sink.Error) []byte {
	body := se.Body
	omitted := max(len(body)-MaxFailedBody, 0)
	head, _ := json.Marshal(failedHead{Failed: Failed{Stream: cfg.Stream, Generation: cfg.Generation, Hash: cfg.Hash, BodyOmitted: omitted},
		Code: se.Code, Message: se.Message, Permanent: se.Permanent})
	return append(append(head, '\n'), body[:len(body)-omitted]...)
}

func decodeFailed(v []byte) (*Failed, error) {
	head, body, _ := bytes.Cut(v, []byte{'\n'})
	var h failedHead
	if err := json.Unmarshal(head, &h); err != nil {
		return nil, err
	}
	h.Err = &sink.Error{Code: h.Code, Message: h.Message, Permanent: h.Permanent}
	if len(body) > 0 {
		h.Err.Body = bytes.Clone(body)
	}
	return &h.Failed, nil
}

// writeFailed writes the failed records of the sinks a flush wrote: a new
// failure replaces the sink's records, records up to the applied generation
// go, a newer record (another owner's) stays. w.io is held.
func (w *Writer) writeFailed(ctx context.Context, sinks map[string]*confighubv1.SinkStatus) error {
	var puts [][]clientv3.Op
	var dels []clientv3.Op
	for name, st := range sinks {
		base := w.keys.failedSink(name)
		if st == nil {
			dels = append(dels, clientv3.OpDelete(base, clientv3.WithPrefix()))
			delete(w.failedSig, name)
			delete(w.failedClear, name)
			continue
		}
		if cfg, se, ok := w.o.failures.LastFailed(name); ok && cfg.Generation > st.GetAppliedGeneration() {
			sig := fmt.Sprint(cfg.Generation, cfg.Hash, se.Error(), len(se.Body))
			if w.failedSig[name] == sig {
				continue
			}
			w.failedSig[name] = sig
			key := w.keys.failed(name, cfg.Generation)
			puts = append(puts, []clientv3.Op{clientv3.OpPut(key, string(encodeFailed(cfg, se))), clientv3.OpDelete(base, clientv3.WithRange(key))})
			continue
		}
		delete(w.failedSig, name)
		applied := st.GetAppliedGeneration()
		if c, known := w.failedClear[name]; known && c >= applied {
			continue
		}
		w.failedClear[name] = applied
		dels = append(dels, clientv3.OpDelete(base, clientv3.WithRange(w.keys.failed(name, applied+1))))
	}
	var txns [][]clientv3.Op
	for i := 0; i < len(dels); i += txnBatch {
		txns = append(txns, dels[i:min(i+txnBatch, len(dels))])
	}
	for _, ops := range append(txns, puts...) {
		if _, ok, err := w.commit(ctx, ops); err != nil || !ok {
			return err // !ok: the lease is gone
		}
	}
	return nil
}

// LastFailed reads a sink's last failed apply from etcd (nil: none).
func (m *Mirror) LastFailed(ctx context.Context, sinkName string) (*Failed, error) {
	tctx, cancel := context.WithTimeout(ctx, m.o.opTimeout)
	defer cancel()
	resp, err := m.cli.Get(tctx, m.keys.failedSink(sinkName), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return nil, fmt.Errorf("read the failed record of sink %q: %w", sinkName, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	f, err := decodeFailed(resp.Kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("failed record %s: %w", resp.Kvs[0].Key, err)
	}
	return f, nil
}
