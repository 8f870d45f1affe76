package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/store"
)

// claim is the replica a data plane is connected to ("": unknown) as of etcd revision
// rev: it writes <prefix>/dp/<node_id> = its id under its lease and runs the kong-dp
// sink; a later claim moves it. A dead replica's claims expire with its lease, its
// sinks go to their rendezvous owner, which purges them once after the purge delay.
type claim struct {
	owner string
	rev   int64
}

// take records c for name unless a newer claim is known.
func (p *Placement) take(name string, c claim) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.rev <= p.claims[name].rev {
		return
	}
	if c.owner == "" {
		delete(p.claims, name)
	} else {
		p.claims[name] = c
	}
}

// load replaces the claims by those read at revision rev (newer ones stay).
func (p *Placement) load(read map[string]claim, rev int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, c := range p.claims {
		if _, ok := read[name]; !ok && c.rev <= rev {
			delete(p.claims, name)
		}
	}
	for name, c := range read {
		if c.rev >= p.claims[name].rev {
			p.claims[name] = c
		}
	}
	p.listed = true
}

func (r *Replica) claimsPrefix() string { return r.prefix + "/dp/" }

// PutSink claims a data plane connected here, storing and putting its sink.
func (r *Replica) PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	name := spec.GetName()
	lease := r.mem.Lease()
	if lease == 0 {
		return nil, false, fmt.Errorf("claim data plane %q: %w", name, ErrNotReady)
	}
	resp, err := r.cli.Put(ctx, r.claimsPrefix()+name, r.mem.ID(), clientv3.WithLease(lease))
	if err != nil {
		return nil, false, fmt.Errorf("claim data plane %q: %w", name, err)
	}
	r.place.take(name, claim{owner: r.mem.ID(), rev: resp.Header.Revision})
	if cur := r.eng.Sink(name); cur == nil || cur.GetStream() != spec.GetStream() {
		if err := r.st.PutSink(ctx, spec); err != nil {
			return nil, false, fmt.Errorf("store the sink of data plane %q: %w", name, err)
		}
	}
	return r.eng.PutSink(spec)
}

// DeleteSink purges a data plane's sink on every replica and releases its claim.
func (r *Replica) DeleteSink(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	key := r.claimsPrefix() + name
	resp, err := r.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", r.mem.ID())).Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("release data plane %q: %w", name, err)
	}
	if resp.Succeeded {
		r.place.take(name, claim{rev: resp.Header.Revision})
	}
	if err := r.st.DeleteSink(ctx, name); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete the sink of data plane %q: %w", name, err)
	}
	r.deleteSink(ctx, name)
	return nil
}

// Sink is the spec of a sink, run here or not.
func (r *Replica) Sink(name string) *confighubv1.Sink { return r.eng.Sink(name) }

// followClaims follows the claims into the placement until ctx ends.
func (r *Replica) followClaims(ctx context.Context) {
	follow(ctx, r.cli, r.claimsPrefix(), r.opTimeout, "read the claims", r.wait,
		func(err error) { r.log.Warn("cluster: data plane claim watch ended; reading again", "error", err) },
		func(resp *clientv3.GetResponse) {
			read := map[string]claim{}
			for _, kv := range resp.Kvs {
				read[strings.TrimPrefix(string(kv.Key), r.claimsPrefix())] = claim{owner: string(kv.Value), rev: kv.ModRevision}
			}
			r.place.load(read, resp.Header.Revision)
			r.eng.Reown()
		},
		func(evs []*clientv3.Event) {
			names := make([]string, 0, len(evs))
			for _, ev := range evs {
				c := claim{rev: ev.Kv.ModRevision}
				if ev.Type == clientv3.EventTypePut {
					c.owner = string(ev.Kv.Value)
				}
				name := strings.TrimPrefix(string(ev.Kv.Key), r.claimsPrefix())
				r.place.take(name, c)
				names = append(names, name)
			}
			r.eng.Reown(names...) // the listener closes a data plane handed over
		})
}
