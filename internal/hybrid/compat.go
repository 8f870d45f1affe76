package hybrid

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kong's sync statuses of a data plane (kong/constants.lua
// CLUSTERING_SYNC_STATUS) that the hub reports.
const (
	SyncNormal                  = "normal"
	SyncKongVersionIncompatible = "kong_version_incompatible"
	SyncPluginSetIncompatible   = "plugin_set_incompatible"
)

// Version is a Kong version's major and minor: what Kong's compatibility
// rule reads (kong/clustering/compat/init.lua, check_kong_version_compatibility).
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// DefaultTarget is the Kong version the hub's configurations target unless
// told otherwise.
var DefaultTarget = Version{3, 9}

// kongVersion is Kong's pattern (kong/clustering/compat/version.lua): a
// data plane's version has at least major.minor.patch.
var kongVersion = regexp.MustCompile(`^(\d+)\.(\d+)\.\d+`)

// parseNodeVersion reads a data plane's node_version ("3.9.1", "3.9.1.0").
func parseNodeVersion(s string) (Version, bool) {
	m := kongVersion.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	return atoiVersion(m[1], m[2])
}

// ParseTarget reads the target Kong version: "3.9" or "3.9.1".
func ParseTarget(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("kong version %q: want MAJOR.MINOR such as 3.9", s)
	}
	v, ok := atoiVersion(parts[0], parts[1])
	if !ok {
		return Version{}, fmt.Errorf("kong version %q: want MAJOR.MINOR such as 3.9", s)
	}
	return v, nil
}

func atoiVersion(maj, min string) (Version, bool) {
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return Version{}, false
	}
	return Version{a, b}, true
}

// checkVersion is Kong's rule: the same major, and a minor not above the
// control plane's (the patch is not compared). It returns why not.
func checkVersion(nodeVersion string, target Version) error {
	v, ok := parseNodeVersion(nodeVersion)
	if !ok {
		return fmt.Errorf("%s: data plane version %q is not a Kong version (MAJOR.MINOR.PATCH)", SyncKongVersionIncompatible, nodeVersion)
	}
	if v.Major != target.Major {
		return fmt.Errorf("%s: data plane version %s has another major version than the hub's target Kong %s", SyncKongVersionIncompatible, nodeVersion, target)
	}
	if v.Minor > target.Minor {
		return fmt.Errorf("%s: data plane version %s is newer than the hub's target Kong %s", SyncKongVersionIncompatible, nodeVersion, target)
	}
	return nil
}

// missingPlugins returns the plugins a configuration configures that the
// data plane does not have, sorted (kong/clustering/compat/init.lua,
// check_configuration_compatibility: such a configuration is not sent).
func missingPlugins(configured []string, has map[string]string) []string {
	var out []string
	for _, p := range configured {
		if _, ok := has[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
