package builtin

import (
	"fmt"

	"github.com/confighub/confighub/clients/file"
	"github.com/confighub/confighub/clients/kong"
	"github.com/confighub/confighub/clients/kongdb"
	"github.com/confighub/confighub/clients/konnect"
	"github.com/confighub/confighub/clients/plugin"
	"github.com/confighub/confighub/sink"
)

// Register adds the built-in kinds to r: file (writing under fileRoot), kong, kong-db, konnect, plugin.
func Register(r *sink.Registry, fileRoot string) error {
	for _, reg := range []func(*sink.Registry) error{
		func(r *sink.Registry) error { return file.Register(r, fileRoot) },
		kong.Register,
		kongdb.Register,
		konnect.Register,
		plugin.Register,
	} {
		if err := reg(r); err != nil {
			return fmt.Errorf("register built-in sink kinds: %w", err)
		}
	}
	return nil
}
