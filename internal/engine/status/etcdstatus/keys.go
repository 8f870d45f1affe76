package etcdstatus

import (
	"fmt"
	"strconv"
	"strings"
)

// Keys under the prefix:
//
//	<prefix>/status/sink/<sink>            SinkStatus of the sink (its stream inside)
//	<prefix>/status/gen/<stream>/<%020d>   GenerationStatus of one generation
//	<prefix>/failed/<sink>/<%020d>         the sink's last failed apply, by generation
//
// Failed records are read when asked for, not watched.
type keys struct{ root string }

func newKeys(prefix string) keys { return keys{root: strings.TrimSuffix(prefix, "/") + "/"} }

func (k keys) all() string                      { return k.root + "status/" }
func (k keys) sink(name string) string          { return k.all() + "sink/" + name }
func (k keys) genStream(s string) string        { return k.all() + "gen/" + s + "/" }
func (k keys) gen(s string, g uint64) string    { return fmt.Sprintf("%s%020d", k.genStream(s), g) }
func (k keys) failedSink(name string) string    { return k.root + "failed/" + name + "/" }
func (k keys) failed(n string, g uint64) string { return fmt.Sprintf("%s%020d", k.failedSink(n), g) }

// parse names the sink, or the stream of the generation, of a status key.
func (k keys) parse(key string) (sink, stream string, ok bool) {
	if name, found := strings.CutPrefix(key, k.sink("")); found {
		return name, "", name != ""
	}
	rest, found := strings.CutPrefix(key, k.all()+"gen/")
	i := strings.LastIndexByte(rest, '/')
	if !found || i <= 0 {
		return "", "", false
	}
	_, err := strconv.ParseUint(rest[i+1:], 10, 64)
	return "", rest[:i], err == nil
}

// A view revision is the etcd revision << revShift plus the change's index
// in it, the same on every replica; a re-read numbers from relistBase.
const (
	revShift   = 20
	relistBase = 1 << 19
)

func viewRev(etcdRev int64, index int) uint64 { return uint64(etcdRev)<<revShift | uint64(index) }
