package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// Kind is the registered kind name.
const Kind = "file"

// Register adds the "file" kind to r.
func Register(r *sink.Registry) error {
	return r.Register(Kind, New, sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetFile() != nil }))
}

// Sink writes each configuration to a file atomically.
type Sink struct {
	path   string
	format confighubv1.Format
}

var _ sink.Sink = (*Sink)(nil)

// New is the factory of the "file" kind.
func New(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
	fs := spec.GetFile()
	if fs == nil {
		return nil, fmt.Errorf("%w: sink %q of kind file needs a file spec (file: {path: ...})", sink.ErrInvalidSpec, spec.GetName())
	}
	if fs.GetPath() == "" {
		return nil, fmt.Errorf("%w: sink %q: file.path is empty", sink.ErrInvalidSpec, spec.GetName())
	}
	switch fs.GetFormat() {
	case confighubv1.Format_FORMAT_UNSPECIFIED, confighubv1.Format_FORMAT_JSON, confighubv1.Format_FORMAT_YAML:
	default:
		return nil, fmt.Errorf("%w: sink %q: file.format %d is not a known format", sink.ErrInvalidSpec, spec.GetName(), fs.GetFormat())
	}
	return &Sink{path: filepath.Clean(fs.GetPath()), format: fs.GetFormat()}, nil
}

// Describe: a file takes any format and size.
func (s *Sink) Describe() sink.Capabilities { return sink.Capabilities{} }

// Apply renders cfg and replaces the file atomically.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	b, err := Render(cfg, s.format)
	if err != nil {
		return &sink.Error{Code: sink.CodeInvalid, Message: err.Error(), Permanent: true, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := WriteAtomic(s.path, b, 0o600); err != nil {
		return &sink.Error{Code: sink.CodeUnavailable, Message: err.Error(), Err: err}
	}
	return nil
}

// Render returns cfg in format f: JSON, YAML, or the bytes as pushed for
// FORMAT_UNSPECIFIED. The result may share cfg's bytes: read only.
func Render(cfg *config.Config, f confighubv1.Format) ([]byte, error) {
	switch f {
	case confighubv1.Format_FORMAT_JSON:
		b, err := cfg.JSON()
		if err != nil {
			return nil, fmt.Errorf("render generation %d as JSON: %w", cfg.Generation, err)
		}
		return b, nil
	case confighubv1.Format_FORMAT_YAML:
		b, err := cfg.YAML()
		if err != nil {
			return nil, fmt.Errorf("render generation %d as YAML: %w", cfg.Generation, err)
		}
		return b, nil
	default:
		return cfg.Raw, nil
	}
}

// WriteAtomic replaces path with b: temp file in the same directory, write,
// fsync, rename, fsync the directory (so the rename itself is durable).
func WriteAtomic(path string, b []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		serr := d.Sync()
		_ = d.Close()
		// Some filesystems refuse fsync on a directory; the rename is done,
		// so only a real I/O error is reported.
		if serr != nil && !errors.Is(serr, os.ErrInvalid) {
			return fmt.Errorf("fsync directory %s: %w", dir, serr)
		}
	}
	return nil
}
