package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Role is what a token may do. Each role implies the ones below it.
type Role int

// The roles, each implying those before it (Policy lists their methods).
const (
	RoleNone  Role = iota // an unknown token
	RoleRead              // configurations, status, history
	RolePush              // also pushes and rollbacks
	RoleAdmin             // also sinks and stream deletion
)

// roleNames are the roles' names, by Role.
var roleNames = []string{RoleNone: "none", RoleRead: "read", RolePush: "push", RoleAdmin: "admin"}

func (r Role) String() string {
	if r < RoleNone || int(r) >= len(roleNames) {
		return roleNames[RoleNone]
	}
	return roleNames[r]
}

// ParseRole reads "read", "push" or "admin".
func ParseRole(s string) (Role, error) {
	if r := slices.Index(roleNames, strings.ToLower(strings.TrimSpace(s))); r > int(RoleNone) {
		return Role(r), nil
	}
	return RoleNone, fmt.Errorf("unknown role %q: want read, push or admin", s)
}

// Token is one entry of a token file: name (logged in its place), role, SHA-256.
type Token struct {
	Name string
	Role Role
	sum  [sha256.Size]byte
}

// Tokens is an immutable set of tokens.
type Tokens struct{ list []Token }

// Len is the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.list)
}

// Counts returns how many tokens have each role (for the reload log line).
func (t *Tokens) Counts() map[string]int {
	m := map[string]int{}
	if t == nil {
		return m
	}
	for _, e := range t.list {
		m[e.Role.String()]++
	}
	return m
}

// Lookup returns the role and name of token, or RoleNone, comparing its SHA-256 with every entry's in constant time.
func (t *Tokens) Lookup(token string) (Role, string) {
	if t == nil || token == "" {
		return RoleNone, ""
	}
	sum := sha256.Sum256([]byte(token))
	role, idx := 0, -1
	for i := range t.list {
		eq := subtle.ConstantTimeCompare(sum[:], t.list[i].sum[:])
		role = subtle.ConstantTimeSelect(eq, int(t.list[i].Role), role)
		idx = subtle.ConstantTimeSelect(eq, i, idx)
	}
	if idx < 0 {
		return RoleNone, ""
	}
	return Role(role), t.list[idx].Name
}

// tokenFile is the YAML form with names (tokens: [{name, token, role}]).
type tokenFile struct {
	Tokens []struct {
		Name  string `yaml:"name"`
		Token string `yaml:"token"`
		Role  string `yaml:"role"`
	} `yaml:"tokens"`
}

// ParseTokens reads a token file: a "tokens" list of {name, token, role}, a YAML mapping token:
// role, or lines "TOKEN ROLE" ('#' comments). Errors name the entry, never the token.
func ParseTokens(data []byte) (*Tokens, error) {
	var (
		entries []Token
		seen    = map[[sha256.Size]byte]string{}
	)
	add := func(where, name, token, role string) error {
		if token == "" {
			return fmt.Errorf("%s: empty token", where)
		}
		if strings.ContainsAny(token, " \t\r\n") {
			return fmt.Errorf("%s: a token cannot contain white space", where)
		}
		r, err := ParseRole(role)
		if err != nil {
			// Not the value: with the columns swapped it is the token.
			return fmt.Errorf("%s: unknown role: want read, push or admin", where)
		}
		sum := sha256.Sum256([]byte(token))
		if prev, ok := seen[sum]; ok {
			return fmt.Errorf("%s: the same token as %s", where, prev)
		}
		seen[sum] = where
		if name == "" {
			name = where
		}
		entries = append(entries, Token{Name: name, Role: r, sum: sum})
		return nil
	}

	if form, err := parseYAML(data, add); form {
		if err != nil {
			return nil, err
		}
	} else if err := parseLines(data, add); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New("no token in the file")
	}
	return &Tokens{list: entries}, nil
}

// parseYAML handles the two YAML forms; false when data is neither.
func parseYAML(data []byte, add func(where, name, token, role string) error) (bool, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return false, nil
	}
	m := n.Content[0]
	if len(m.Content) == 2 && m.Content[0].Value == "tokens" && m.Content[1].Kind == yaml.SequenceNode {
		var f tokenFile
		if err := m.Decode(&f); err != nil {
			// yaml's message may quote a token: name the line only.
			return true, fmt.Errorf("tokens list: want entries {name, token, role}%s", yamlErrLine(err))
		}
		for i, e := range f.Tokens {
			where := fmt.Sprintf("tokens[%d]", i)
			if e.Name != "" {
				where = fmt.Sprintf("tokens[%d] (%s)", i, e.Name)
			}
			if err := add(where, e.Name, e.Token, e.Role); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		where := fmt.Sprintf("line %d", k.Line)
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return true, fmt.Errorf("%s: want token: role", where)
		}
		if err := add(where, "", k.Value, v.Value); err != nil {
			return true, err
		}
	}
	return true, nil
}

// yamlErrLine is " (line N)" of a YAML type error, without its message.
func yamlErrLine(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if i := strings.Index(te.Errors[0], ":"); i > 0 && strings.HasPrefix(te.Errors[0], "line ") {
			return " (" + te.Errors[0][:i] + ")"
		}
	}
	return ""
}

func parseLines(data []byte, add func(where, name, token, role string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		where := fmt.Sprintf("line %d", ln)
		if len(fields) != 2 {
			return fmt.Errorf("%s: want \"TOKEN ROLE\" (two fields), got %d fields", where, len(fields))
		}
		if err := add(where, "", fields[0], fields[1]); err != nil {
			return err
		}
	}
	return sc.Err()
}

// LoadTokens reads and parses a token file.
func LoadTokens(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokens file: %w", err)
	}
	t, err := ParseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return t, nil
}
