package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Folder follows a folder of Kong configurations: each *.yaml, *.yml or
// *.json file is the configuration of the stream named after it
// (default.yaml is stream "default").
type Folder struct {
	Dir  string
	Ctl  *Controller
	Wait time.Duration // how long one Sync waits for the sinks
	// Synced are the bytes last synced per file: a file touched without a
	// change, or an unchanged one the hub already refused, is not pushed
	// again.
	synced map[string][]byte
	stat   map[string]os.FileInfo
}

// formats maps the file extensions the controller reads.
var formats = map[string]confighubv1.Format{
	".yaml": confighubv1.Format_FORMAT_YAML,
	".yml":  confighubv1.Format_FORMAT_YAML,
	".json": confighubv1.Format_FORMAT_JSON,
}

// Poll syncs every file that changed since the last Poll, in name order,
// and returns the rejections by file. A push the hub could not take (not
// reachable) is tried again at the next Poll.
func (f *Folder) Poll(ctx context.Context) (map[string][]Rejection, error) {
	if f.synced == nil {
		f.synced, f.stat = map[string][]byte{}, map[string]os.FileInfo{}
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	out := map[string][]Rejection{}
	for _, e := range entries {
		format, ok := formats[filepath.Ext(e.Name())]
		if !ok || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if old := f.stat[e.Name()]; old != nil && old.Size() == info.Size() && old.ModTime().Equal(info.ModTime()) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(f.Dir, e.Name()))
		if err != nil {
			continue
		}
		f.stat[e.Name()] = info
		if prev, ok := f.synced[e.Name()]; ok && bytes.Equal(prev, raw) {
			continue
		}
		stream := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		wctx, cancel := context.WithTimeout(ctx, f.Wait)
		rej, err := f.Ctl.Sync(wctx, stream, raw, format)
		cancel()
		if err != nil {
			fmt.Fprintf(f.Ctl.Out, "%s: %v\n", e.Name(), err)
			if !refused(err) {
				delete(f.stat, e.Name()) // try again at the next poll
				continue
			}
		}
		f.synced[e.Name()] = raw
		if len(rej) > 0 {
			out[e.Name()] = rej
		}
	}
	return out, ctx.Err()
}

// refused: the hub took the bytes but its sinks did not all apply them in
// time, or it refused the bytes themselves (not a Kong configuration, too
// large); pushing the same bytes again would not help.
func refused(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.ResourceExhausted, codes.FailedPrecondition:
		return true
	}
	return errors.Is(err, errNotApplied)
}

// Run polls the folder every interval on clock until ctx ends.
func (f *Folder) Run(ctx context.Context, clock clockwork.Clock, interval time.Duration) error {
	t := clock.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := f.Poll(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(f.Ctl.Out, "reading %s: %v\n", f.Dir, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.Chan():
		}
	}
}
