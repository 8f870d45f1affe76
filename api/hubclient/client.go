package hubclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

const (
	// DefaultUnaryLimit is the size above which Push uploads in chunks.
	DefaultUnaryLimit = 4 << 20
	// DefaultChunkBytes is the size of one upload chunk.
	DefaultChunkBytes = 1 << 20
)

// StatusPageHeader is the GetStatus/WatchStatus response header naming the hub's status page URL.
const StatusPageHeader = "confighub-status-page"

// BearerToken sends token with every call, also over plaintext (a loopback hub).
func BearerToken(token string) credentials.PerRPCCredentials { return bearer(token) }

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// Client talks to one hub.
type Client struct {
	Hub   confighubv1.ConfigHubServiceClient
	Admin confighubv1.SinkAdminServiceClient

	unaryLimit, chunk      int
	progress               func(sent, total int64)
	minBackoff, maxBackoff time.Duration
	watchState             func(error)
}

// Option configures a Client.
type Option func(*Client)

// WithUnaryLimit sets the size above which Push uses UploadConfig (0: always).
func WithUnaryLimit(n int) Option { return func(c *Client) { c.unaryLimit = n } }

// WithChunkBytes sets the upload chunk size.
func WithChunkBytes(n int) Option { return func(c *Client) { c.chunk = n } }

// WithProgress is called after every upload chunk (for a progress bar).
func WithProgress(f func(sent, total int64)) Option { return func(c *Client) { c.progress = f } }

// WithWatchBackoff bounds the wait between Watch reconnects.
func WithWatchBackoff(min, max time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = min, max }
}

// WithWatchState makes Watch call f(err) on each break or failed reconnect,
// and f(nil) once the hub's header answers a new stream.
func WithWatchState(f func(err error)) Option { return func(c *Client) { c.watchState = f } }

// New returns a client on conn.
func New(conn grpc.ClientConnInterface, opts ...Option) *Client {
	c := &Client{
		Hub:        confighubv1.NewConfigHubServiceClient(conn),
		Admin:      confighubv1.NewSinkAdminServiceClient(conn),
		unaryLimit: DefaultUnaryLimit,
		chunk:      DefaultChunkBytes,
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 10 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Push is one configuration to send.
type Push struct {
	Stream             string
	Config             []byte
	Format             confighubv1.Format
	ExpectedGeneration uint64
	Labels             map[string]string
	// Hash is Config's hex SHA-256, if known: an upload sends it as expected_hash.
	Hash string
}

// Push sends a configuration, by PushConfig or, above the unary limit, by
// UploadConfig. Its errors are gRPC status errors, a ctx that ends included.
func (c *Client) Push(ctx context.Context, p Push) (*confighubv1.PushConfigResponse, error) {
	if c.unaryLimit > 0 && len(p.Config) <= c.unaryLimit {
		return c.Hub.PushConfig(ctx, &confighubv1.PushConfigRequest{
			Stream: p.Stream, Config: p.Config, Format: p.Format,
			ExpectedGeneration: p.ExpectedGeneration, Labels: p.Labels,
		})
	}
	return c.upload(ctx, p)
}

func (c *Client) upload(ctx context.Context, p Push) (*confighubv1.PushConfigResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.Hub.UploadConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("open upload: %w", err)
	}
	total := int64(len(p.Config))
	sum := p.Hash
	if sum == "" {
		sum = hashHex(p.Config)
	}
	hdr := &confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{
		Stream: p.Stream, Format: p.Format, TotalSize: uint64(total), ExpectedHash: sum,
		ExpectedGeneration: p.ExpectedGeneration, Labels: p.Labels,
	}}}
	if err := st.Send(hdr); err != nil {
		return nil, c.uploadErr(st, err)
	}
	for off := 0; off < len(p.Config); off += c.chunk {
		end := min(off+c.chunk, len(p.Config))
		if err := st.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: p.Config[off:end]}}); err != nil {
			return nil, c.uploadErr(st, err)
		}
		if c.progress != nil {
			c.progress(int64(end), total)
		}
	}
	res, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return &confighubv1.PushConfigResponse{Generation: res.GetGeneration(), Hash: res.GetHash(), Unchanged: res.GetUnchanged(), Sinks: res.Sinks}, nil
}

// uploadErr gets the server's status when Send fails with io.EOF.
func (c *Client) uploadErr(st grpc.ClientStreamingClient[confighubv1.UploadConfigRequest, confighubv1.UploadConfigResponse], err error) error {
	if errors.Is(err, io.EOF) {
		if _, rerr := st.CloseAndRecv(); rerr != nil {
			return rerr
		}
	}
	return err
}

// Watch calls fn with every status event of a stream until ctx ends or fn
// fails, resuming a broken stream from the last revision; permanent errors end it.
func (c *Client) Watch(ctx context.Context, stream string, fromRevision uint64, fn func(*confighubv1.WatchStatusResponse) error) error {
	rev, wait, broken := fromRevision, c.minBackoff, false
	var fnErr error
	once := func() error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := c.Hub.WatchStatus(ctx, &confighubv1.WatchStatusRequest{Stream: stream, FromRevision: rev})
		if err != nil {
			return err
		}
		// The hub's header, not an open stream (a proxy opens one), says the watch is open.
		if broken {
			if md, err := st.Header(); err == nil && md != nil {
				broken = false
				c.watchState(nil)
			}
		}
		for {
			ev, err := st.Recv()
			if err != nil {
				return err
			}
			wait = c.minBackoff // got data: the connection is healthy again
			if ev.GetRevision() > rev || ev.GetSnapshot() != nil {
				rev = ev.GetRevision()
			}
			if fnErr = fn(ev); fnErr != nil {
				return fnErr
			}
		}
	}
	for {
		err := once()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case fnErr != nil:
			return fnErr
		}
		switch status.Code(err) {
		case codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument, codes.Unimplemented:
			return err
		}
		if c.watchState != nil {
			c.watchState(err)
			broken = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait/2 + rand.N(wait/2+1)):
		}
		wait = min(wait*2, c.maxBackoff)
	}
}

// hashHex is the hub's config hash, fed in pieces as the hub does (config.Hasher).
func hashHex(b []byte) string {
	h := sha256.New()
	writePieces(h, b)
	return hex.EncodeToString(h.Sum(nil))
}

const hashPiece = 64 << 10

func writePieces(w io.Writer, b []byte) {
	for len(b) > hashPiece {
		_, _ = w.Write(b[:hashPiece])
		b = b[hashPiece:]
	}
	_, _ = w.Write(b)
}
