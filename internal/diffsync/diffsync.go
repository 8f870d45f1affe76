package diffsync

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/crud"
	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/kongapi"
	"github.com/confighub/confighub/sink"
)

// KonnectKongVersion is the Kong version a Konnect target is rendered for.
var KonnectKongVersion = semver.MustParse("3.9.0")

// Options configure a Syncer; the zero value syncs a Kong Admin API.
type Options struct {
	Concurrency   int          // entity operations at once (0: 10)
	ControlPlane  string       // the Konnect control plane whose Admin API the client's base URL is
	DropConsumers bool         // leave consumers, their credentials and plugins out of the target
	Logger        *slog.Logger // nil: discard
	TempDir       string       // for the per-sync temporary file ("": the system's)
}

// Syncer syncs configurations to one destination, one Sync at a time.
type Syncer struct {
	client      *kong.Client
	o           Options
	seenVersion *semver.Version // the destination's, once asked
}

// New returns a Syncer that talks to the destination through client.
func New(client *kong.Client, o Options) *Syncer {
	o.Concurrency = cmp.Or(max(o.Concurrency, 0), 10)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return &Syncer{client: client, o: o}
}

// Result counts the operations a Sync sent.
type Result struct{ Created, Updated, Deleted int }

// Sync makes the destination hold cfg; it fails with a *sink.Error. The
// reconciler retries a 500 itself (up to 4 times) within the attempt's timeout.
func (s *Syncer) Sync(ctx context.Context, cfg *config.Config) (Result, error) {
	raw, err := cfg.JSON()
	if err != nil {
		return Result{}, &sink.Error{Code: sink.CodeInvalid, Message: "converting to JSON: " + err.Error(), Permanent: true, Err: err}
	}
	content, err := s.readContent(deckForm(raw))
	if err != nil {
		return Result{}, &sink.Error{Code: sink.CodeInvalid, Message: err.Error(), Permanent: true, Err: err,
			EntityErrors: validationEntityErrors(err)}
	}
	if s.o.DropConsumers {
		dropConsumers(content)
	}

	dumpCfg := dump.Config{KonnectControlPlane: s.o.ControlPlane}
	rawCurrent, err := dump.Get(ctx, s.client, dumpCfg)
	if err != nil {
		return Result{}, classify("reading the current entities", err)
	}
	current, err := state.Get(rawCurrent)
	if err != nil {
		return Result{}, &sink.Error{Code: sink.CodeInternal, Message: "indexing the current entities: " + err.Error(), Err: err}
	}

	version, err := s.kongVersion(ctx)
	if err != nil {
		return Result{}, classify("reading the Kong version", err)
	}
	rawTarget, err := file.Get(ctx, content, file.RenderConfig{CurrentState: current, KongVersion: version}, dumpCfg, s.client)
	if err != nil {
		return Result{}, classifyBuild(err)
	}
	target, err := state.Get(rawTarget)
	if err != nil {
		return Result{}, &sink.Error{Code: sink.CodeInvalid, Message: "indexing the target entities: " + err.Error(), Permanent: true, Err: err}
	}

	syncer, err := diff.NewSyncer(diff.SyncerOpts{
		CurrentState:        current,
		TargetState:         target,
		KongClient:          s.client,
		SilenceWarnings:     true,
		IsKonnect:           s.o.ControlPlane != "",
		EnableEntityActions: true,
	})
	if err != nil {
		return Result{}, &sink.Error{Code: sink.CodeInternal, Message: "creating the syncer: " + err.Error(), Err: err}
	}

	var failed []diff.EntityAction // read while Solve runs: the syncer blocks on them
	done := make(chan struct{})
	go func() {
		defer close(done)
		for a := range syncer.GetResultChan() {
			if a.Error != nil {
				failed = append(failed, a)
			} else {
				s.o.Logger.Debug("entity synced", "action", a.Action, "entity_kind", a.Entity.Kind, "entity_name", a.Entity.Name) // kind= is the sink's
			}
		}
	}()
	stats, errs, _ := syncer.Solve(ctx, s.o.Concurrency, false, false)
	<-done

	res := Result{int(stats.CreateOps.Count()), int(stats.UpdateOps.Count()), int(stats.DeleteOps.Count())}
	if len(errs) == 0 && len(failed) == 0 {
		return res, nil
	}
	return res, solveError(ctx, errs, failed)
}

// kongVersion is the version the target is rendered for (GET /, asked once).
func (s *Syncer) kongVersion(ctx context.Context) (semver.Version, error) {
	if s.o.ControlPlane != "" {
		return KonnectKongVersion, nil
	}
	if s.seenVersion != nil {
		return *s.seenVersion, nil
	}
	info, err := s.client.Info.Get(ctx)
	if err != nil {
		return semver.Version{}, err
	}
	if info.Version == "" {
		return semver.Version{}, errors.New("GET / reported no version")
	}
	v, err := utils.ParseKongVersion(info.Version)
	if err != nil {
		return semver.Version{}, fmt.Errorf("parsing Kong version %q: %w", info.Version, err)
	}
	s.seenVersion = &v
	return v, nil
}

// deckForm rewrites consumer_group_consumers into consumers' groups and
// degraphql_routes into custom_entities, as deck spells them; what it cannot
// read is returned unchanged (the reader reports it).
func deckForm(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`"consumer_group_consumers"`)) && !bytes.Contains(raw, []byte(`"degraphql_routes"`)) {
		return raw
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return raw
	}
	if members, ok := root["consumer_group_consumers"].([]any); ok {
		groups := index(root["consumer_groups"], "id", "name")
		consumers := index(root["consumers"], "id", "username", "custom_id")
		var left []any
		for _, m := range members {
			mm, _ := m.(map[string]any)
			key, _ := mm["consumer"].(string)
			group, _ := mm["consumer_group"].(string)
			c, g := consumers[key], groups[group]
			name, _ := g["name"].(string)
			if c == nil || name == "" {
				left = append(left, m)
				continue
			}
			list, _ := c["groups"].([]any)
			c["groups"] = append(list, map[string]any{"name": name})
		}
		if left == nil {
			delete(root, "consumer_group_consumers")
		} else {
			root["consumer_group_consumers"] = left
		}
	}
	if routes, ok := root["degraphql_routes"].([]any); ok {
		custom, _ := root["custom_entities"].([]any)
		for _, r := range routes {
			rm, ok := r.(map[string]any)
			if !ok {
				return raw
			}
			fields := maps.Clone(rm)
			delete(fields, "id")
			e := map[string]any{"type": "degraphql_routes", "fields": fields}
			if id, ok := rm["id"]; ok {
				e["id"] = id
			}
			custom = append(custom, e)
		}
		delete(root, "degraphql_routes")
		root["custom_entities"] = custom
	}
	out, err := json.Marshal(root)
	if err != nil {
		return raw
	}
	return out
}

// index maps each value of the given string fields of a list's objects to it.
func index(list any, fields ...string) map[string]map[string]any {
	out := map[string]map[string]any{}
	items, _ := list.([]any)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		for _, f := range fields {
			if v, ok := m[f].(string); ok && v != "" {
				out[v] = m
			}
		}
	}
	return out
}

// deck's template opening delimiter, and an action that prints it.
const (
	templateDelim = "${{"
	escapedDelim  = `${{"${{"}}`
)

// readContent runs the reconciler's file reader on raw through a private temp file.
func (s *Syncer) readContent(raw []byte) (*file.Content, error) {
	body := bytes.TrimLeft(raw, " \t\r\n")
	if bytes.Contains(body, []byte(templateDelim)) {
		body = bytes.ReplaceAll(body, []byte(templateDelim), []byte(escapedDelim))
	}
	dir, err := os.MkdirTemp(s.o.TempDir, "confighub-diffsync-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return nil, fmt.Errorf("temporary file: %w", err)
	}
	content, err := file.GetContentFromFiles([]string{path}, false)
	if err != nil {
		return nil, readerError(path, err)
	}
	return content, nil
}

// readerError drops the temporary file's name from the reader's message.
func readerError(path string, err error) error {
	var arr utils.ErrArray
	if errors.As(err, &arr) && len(arr.Errors) > 0 {
		msgs := make([]string, 0, len(arr.Errors))
		for _, e := range arr.Errors {
			if u := errors.Unwrap(e); u != nil && strings.Contains(e.Error(), path) {
				e = u
			}
			msgs = append(msgs, e.Error())
		}
		return &readError{msg: strings.Join(msgs, "; "), err: err}
	}
	return &readError{msg: strings.ReplaceAll(err.Error(), path, "config"), err: err}
}

type readError struct {
	msg string
	err error
}

func (e *readError) Error() string { return e.msg }
func (e *readError) Unwrap() error { return e.err }

// validationEntityErrors turns the reader's JSON-schema errors into entity errors.
func validationEntityErrors(err error) []*confighubv1.EntityError {
	var out []*confighubv1.EntityError
	var walk func(error)
	walk = func(e error) {
		var arr utils.ErrArray
		if errors.As(e, &arr) {
			for _, x := range arr.Errors {
				walk(x)
			}
			return
		}
		var ve *file.ValidationError
		if !errors.As(e, &ve) || ve.Err == nil {
			return
		}
		ee := &confighubv1.EntityError{}
		var obj struct {
			ID       string   `json:"id"`
			Name     string   `json:"name"`
			Username string   `json:"username"`
			Tags     []string `json:"tags"`
		}
		if json.Unmarshal([]byte(ve.Object), &obj) == nil {
			ee.EntityId, ee.EntityTags, ee.EntityName = obj.ID, obj.Tags, cmp.Or(obj.Name, obj.Username)
		}
		// gojsonschema: "consumers.0.hmacauth_credentials.0: secret is required"
		msg := ve.Err.Error()
		fe := &confighubv1.FieldError{Type: "entity", Message: msg}
		if loc, rest, ok := strings.Cut(msg, ": "); ok {
			parts := strings.Split(loc, ".")
			for i := len(parts) - 1; i >= 0; i-- {
				if _, err := strconv.Atoi(parts[i]); err != nil {
					ee.EntityType = parts[i]
					break
				}
			}
			fe.Message = rest
			if f, ok := strings.CutSuffix(rest, " is required"); ok {
				fe.Type, fe.Field = "field", f
			}
		}
		ee.Errors = []*confighubv1.FieldError{fe}
		out = append(out, ee)
	}
	walk(err)
	return out
}

// dropConsumers removes consumers and every consumer-scoped plugin.
func dropConsumers(c *file.Content) {
	c.Consumers = nil
	for i := range c.ConsumerGroups {
		c.ConsumerGroups[i].Consumers = nil
	}
	c.Plugins = slices.DeleteFunc(c.Plugins, func(p file.FPlugin) bool { return p.Consumer != nil })
	filter := func(ps []*file.FPlugin) []*file.FPlugin {
		return slices.DeleteFunc(ps, func(p *file.FPlugin) bool { return p.Consumer != nil })
	}
	for i := range c.Services {
		c.Services[i].Plugins = filter(c.Services[i].Plugins)
		for _, r := range c.Services[i].Routes {
			r.Plugins = filter(r.Plugins)
		}
	}
	for i := range c.Routes {
		c.Routes[i].Plugins = filter(c.Routes[i].Plugins)
	}
}

// classify maps an error of a request to the destination.
func classify(what string, err error) *sink.Error {
	msg := what + ": " + err.Error()
	// The reconciler's ActionError has no Unwrap; look inside it.
	var actErr *crud.ActionError
	if errors.As(err, &actErr) && actErr.Err != nil {
		e := classify(what, actErr.Err)
		e.Message, e.Err = msg, err
		return e
	}
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) {
		code, permanent := kongapi.Classify(apiErr.Code())
		e := &sink.Error{Code: code, Permanent: permanent, Message: msg, Body: apiErr.Raw(), Err: err}
		if d, ok := apiErr.Details().(kong.ErrTooManyRequestsDetails); ok && code == sink.CodeRateLimited {
			e.RetryAfter = d.RetryAfter
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &sink.Error{Code: sink.CodeTimeout, Message: msg, Err: err}
	}
	return &sink.Error{Code: sink.CodeUnavailable, Message: msg, Err: err}
}

// classifyBuild maps an error of file.Get: a request's, or a refusal.
func classifyBuild(err error) *sink.Error {
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) || isTransport(err) {
		return classify("rendering the target", err)
	}
	return &sink.Error{Code: sink.CodeInvalid, Message: err.Error(), Permanent: true, Err: err}
}

func isTransport(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "EOF")
}

// solveError folds the failures of a Solve into one *sink.Error.
func solveError(ctx context.Context, errs []error, failed []diff.EntityAction) *sink.Error {
	out := &sink.Error{Code: sink.CodeRejected, Permanent: true}
	var msgs []string
	merge := func(e *sink.Error) {
		if !e.Permanent {
			if out.Permanent {
				out.Permanent, out.Code = false, e.Code
			}
			if e.RetryAfter > out.RetryAfter {
				out.RetryAfter, out.Code = e.RetryAfter, e.Code
			}
		}
	}
	for _, a := range failed {
		out.EntityErrors = append(out.EntityErrors, entityError(a))
		merge(classify(a.Entity.Kind, a.Error))
	}
	for _, err := range errs {
		msgs = append(msgs, err.Error())
		merge(classify("sync", err))
	}
	if ctx.Err() != nil {
		merge(&sink.Error{Code: sink.CodeTimeout})
	}
	if len(msgs) == 0 {
		for _, a := range failed {
			msgs = append(msgs, fmt.Sprintf("%s %s %s: %v", a.Action, a.Entity.Kind, a.Entity.Name, a.Error))
		}
	}
	out.Message = fmt.Sprintf("%d entity operation(s) failed: %s", max(len(errs), len(failed)), strings.Join(msgs, "; "))
	out.Err = utils.ErrArray{Errors: errs}
	return out
}

// entityError describes a failed operation (go-kong structs: ID, Tags).
func entityError(a diff.EntityAction) *confighubv1.EntityError {
	subj := a.Entity.New
	if subj == nil || reflect.ValueOf(subj).IsNil() {
		subj = a.Entity.Old
	}
	ee := &confighubv1.EntityError{
		EntityType: a.Entity.Kind,
		EntityName: a.Entity.Name,
		Errors:     []*confighubv1.FieldError{{Type: "entity", Message: a.Error.Error()}},
	}
	v := reflect.Indirect(reflect.ValueOf(subj))
	if v.Kind() != reflect.Struct {
		return ee
	}
	if f := v.FieldByName("ID"); f.IsValid() {
		id, _ := f.Interface().(*string)
		ee.EntityId = kong.StringValue(id)
	}
	if f := v.FieldByName("Tags"); f.IsValid() {
		if tags, ok := f.Interface().([]*string); ok {
			for _, t := range tags {
				if t != nil {
					ee.EntityTags = append(ee.EntityTags, *t)
				}
			}
		}
	}
	return ee
}
