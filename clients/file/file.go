package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// Kind is the registered kind name.
const Kind = "file"

// Register adds the "file" kind to r, its sinks confined to root.
func Register(r *sink.Registry, root string) error {
	f, err := Factory(root)
	if err != nil {
		return err
	}
	return r.Register(Kind, f, sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetFile() != nil }))
}

// Sink writes each configuration to a file atomically.
type Sink struct {
	root   string // absolute; created on the first write if missing
	rel    string // the file, relative to root and local to it
	format confighubv1.Format
}

var _ sink.Sink = (*Sink)(nil)

// Factory returns the factory of the "file" kind for sinks confined to root.
func Factory(root string) (sink.Factory, error) {
	if root == "" {
		return nil, errors.New("file sinks: the root directory is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("file sinks: root %s: %w", root, err)
	}
	return func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		fs := spec.GetFile()
		rel, err := confine(abs, fs.GetPath())
		if err != nil {
			return nil, fmt.Errorf("%w: sink %q: file.path %q: %v", sink.ErrInvalidSpec, spec.GetName(), fs.GetPath(), err)
		}
		return &Sink{root: abs, rel: rel, format: fs.GetFormat()}, nil
	}, nil
}

// confine returns path relative to root, or why it is not a file inside it
// (lexically, then on disk); missing folders are accepted.
func confine(root, path string) (string, error) {
	rel, ok := filepath.Clean(path), true
	if filepath.IsAbs(rel) {
		rel, ok = relativeTo(root, rel)
	}
	if !ok || !filepath.IsLocal(rel) || rel == "." {
		return "", fmt.Errorf("not a file inside the file sink root %s (a path relative to it, or an absolute path under it)", root)
	}
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return rel, nil
	}
	if err != nil {
		return "", fmt.Errorf("file sink root: %w", err)
	}
	defer r.Close()
	fi, err := r.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rel, nil
	case err != nil:
		return "", fmt.Errorf("resolves outside the file sink root %s, or cannot be resolved: %w", root, err)
	case fi.IsDir():
		return "", fmt.Errorf("is a directory under the file sink root %s", root)
	}
	return rel, nil
}

// relativeTo returns abs relative to root, or to root's link-free path.
func relativeTo(root, abs string) (string, bool) {
	if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
		return rel, true
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		if rel, err := filepath.Rel(real, abs); err == nil && filepath.IsLocal(rel) {
			return rel, true
		}
	}
	return "", false
}

// Describe: a file takes any format and size.
func (s *Sink) Describe() sink.Capabilities { return sink.Capabilities{} }

// Apply renders cfg and replaces the file atomically.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	b, err := render(cfg, s.format)
	if err != nil {
		return &sink.Error{Code: sink.CodeInvalid, Message: err.Error(), Permanent: true, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.write(b); err != nil {
		return &sink.Error{Code: sink.CodeUnavailable, Message: err.Error(), Err: err}
	}
	return nil
}

func (s *Sink) write(b []byte) error {
	if err := os.MkdirAll(s.root, 0o750); err != nil {
		return fmt.Errorf("create the file sink root: %w", err)
	}
	// os.Root: a folder swapped for a link out of root fails the write.
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return fmt.Errorf("open the file sink root: %w", err)
	}
	defer r.Close()
	return WriteAtomic(r, s.rel, b, 0o600)
}

// render returns cfg in format f, or as pushed for FORMAT_UNSPECIFIED.
func render(cfg *config.Config, f confighubv1.Format) ([]byte, error) {
	var b []byte
	var err error
	switch f {
	case confighubv1.Format_FORMAT_JSON:
		b, err = cfg.JSON()
	case confighubv1.Format_FORMAT_YAML:
		b, err = cfg.YAML()
	default:
		return cfg.Raw, nil
	}
	if err != nil {
		return nil, fmt.Errorf("render generation %d as %s: %w", cfg.Generation, strings.TrimPrefix(f.String(), "FORMAT_"), err)
	}
	return b, nil
}

// WriteAtomic durably replaces name under root with b: missing folders made, a temporary
// file fsynced and renamed over name, the folder fsynced.
func WriteAtomic(root *os.Root, name string, b []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(name)
	if err := mkdirAll(root, dir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Chmod(perm); err != nil { // exactly perm, whatever the umask
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = root.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, name, err)
	}
	return syncDir(root, dir)
}

// mkdirAll creates dir's missing folders, fsyncing each new one's parent.
func mkdirAll(root *os.Root, dir string) error {
	if dir == "." {
		return nil
	}
	parent := "."
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		p := filepath.Join(parent, part)
		err := root.Mkdir(p, 0o750)
		switch {
		case errors.Is(err, fs.ErrExist):
		case err != nil:
			return fmt.Errorf("create folder %s: %w", p, err)
		default:
			if err := syncDir(root, parent); err != nil {
				return err
			}
		}
		parent = p
	}
	return nil
}

func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s: %w", dir, err)
	}
	serr := d.Sync()
	_ = d.Close()
	// Some filesystems refuse fsync on a directory.
	if serr != nil && !errors.Is(serr, os.ErrInvalid) {
		return fmt.Errorf("fsync folder %s: %w", dir, serr)
	}
	return nil
}
