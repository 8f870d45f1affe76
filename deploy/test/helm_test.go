package deploytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the repository's top folder (this module sits in deploy/test).
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

var chart = filepath.Join(root, "deploy", "helm", "confighub")

// helmBin is the pinned helm the Makefile installs ($CONFIGHUB_HELM, else
// ./bin/helm); without it the chart cannot be checked, so the test fails.
func helmBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CONFIGHUB_HELM")
	if p == "" {
		p = filepath.Join(root, "bin", "helm")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no helm at %s: run make deploy-test (it installs the pinned helm into ./bin) or set CONFIGHUB_HELM", p)
	}
	return p
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// valueSets are the chart's ci/*-values.yaml files: the value sets that
// matter (single node, replicated, TLS, with and without the cluster
// listener).
func valueSets(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]string{}
	for _, f := range files {
		sets[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = f
	}
	for _, want := range []string{"single-node", "replicated", "tls", "cluster", "cluster-pki-replicated"} {
		if sets[want] == "" {
			t.Fatalf("the chart has no ci/%s-values.yaml", want)
		}
	}
	return sets
}

// object is one rendered or written Kubernetes object, decoded into its type.
type object struct {
	Kind, Name, Source string
	Obj                any
}

// render runs helm template for one value set (and further helm
// arguments such as --set) and decodes every object.
func render(t *testing.T, release, namespace string, values string, extra ...string) []object {
	t.Helper()
	args := []string{"template", release, chart, "--namespace", namespace}
	if values != "" {
		args = append(args, "-f", values)
	}
	args = append(args, extra...)
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, "helm template "+filepath.Base(values), []byte(out))
}

// decodeAll splits a multi-document YAML stream and decodes every document
// strictly: an unknown or misplaced field, a duplicate key or a kind this
// repository does not ship fails.
func decodeAll(t *testing.T, source string, raw []byte) []object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if tm.Kind == "" {
			continue // a document of only comments
		}
		var obj any
		switch tm.APIVersion + "/" + tm.Kind {
		case "v1/Namespace":
			obj = &corev1.Namespace{}
		case "v1/ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1/Secret":
			obj = &corev1.Secret{}
		case "v1/Service":
			obj = &corev1.Service{}
		case "apps/v1/StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "apps/v1/Deployment":
			obj = &appsv1.Deployment{}
		case "policy/v1/PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		default:
			t.Fatalf("%s: unexpected %s %s", source, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s: %v\n%s", source, tm.Kind, err, doc)
		}
		name := obj.(metav1.Object).GetName()
		if name == "" {
			t.Fatalf("%s: a %s without a name", source, tm.Kind)
		}
		objs = append(objs, object{Kind: tm.Kind, Name: name, Source: source, Obj: obj})
	}
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", source)
	}
	return objs
}

func find[T any](objs []object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.Obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func one[T any](t *testing.T, objs []object) T {
	t.Helper()
	all := find[T](objs)
	if len(all) != 1 {
		var zero T
		t.Fatalf("want one %T, got %d", zero, len(all))
	}
	return all[0]
}

// workload is the hub's pod template and selector, from a StatefulSet or a
// Deployment.
type workload struct {
	name     string
	selector *metav1.LabelSelector
	pod      corev1.PodTemplateSpec
	claims   []corev1.PersistentVolumeClaim
}

// workloads are the StatefulSets and Deployments that run the hub (a
// container named confighub); the manifests' etcd is not one.
func workloads(objs []object) []workload {
	var ws []workload
	for _, s := range find[*appsv1.StatefulSet](objs) {
		ws = append(ws, workload{s.Name, s.Spec.Selector, s.Spec.Template, s.Spec.VolumeClaimTemplates})
	}
	for _, d := range find[*appsv1.Deployment](objs) {
		ws = append(ws, workload{d.Name, d.Spec.Selector, d.Spec.Template, nil})
	}
	hub := ws[:0]
	for _, w := range ws {
		for _, c := range w.pod.Spec.Containers {
			if c.Name == "confighub" {
				hub = append(hub, w)
				break
			}
		}
	}
	return hub
}

func hubContainer(t *testing.T, w workload) corev1.Container {
	t.Helper()
	for _, c := range w.pod.Spec.Containers {
		if c.Name == "confighub" {
			return c
		}
	}
	t.Fatalf("%s has no confighub container", w.name)
	return corev1.Container{}
}

// flagValue is the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// checkWiring: the selector selects the pods, every mount has its volume,
// every file a flag names lies under a mount, $(VAR) in args has its env,
// the probes and Services reach declared ports.
func checkWiring(t *testing.T, source string, objs []object) {
	t.Helper()
	ws := workloads(objs)
	for _, w := range ws {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(w.pod.Labels)) {
			t.Errorf("%s: %s: the selector %v does not select its pods %v", source, w.name, w.selector, w.pod.Labels)
		}
		vols := map[string]bool{}
		for _, v := range w.pod.Spec.Volumes {
			vols[v.Name] = true
		}
		for _, c := range w.claims {
			vols[c.Name] = true
		}
		c := hubContainer(t, w)
		var mounts []string
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s: %s: mount %s has no volume", source, w.name, m.Name)
			}
			mounts = append(mounts, m.MountPath)
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, a := range c.Args {
			_, v, _ := strings.Cut(a, "=")
			if strings.HasPrefix(v, "/") && !strings.HasPrefix(a, "--etcd-prefix=") {
				under := false
				for _, m := range mounts {
					if v == m || strings.HasPrefix(v, m+"/") {
						under = true
					}
				}
				if !under {
					t.Errorf("%s: %s: %s names a file under no mount (%v)", source, w.name, a, mounts)
				}
			}
			for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(a, -1) {
				if !env[m[1]] {
					t.Errorf("%s: %s: %s uses $(%s), which the container's env lacks", source, w.name, a, m[1])
				}
			}
		}
		listen, _ := flagValue(c.Args, "listen")
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p == nil {
				t.Errorf("%s: %s: a probe is missing", source, w.name)
				continue
			}
			var port string
			switch {
			case p.GRPC != nil:
				port = fmt.Sprint(p.GRPC.Port)
			case p.TCPSocket != nil:
				port = p.TCPSocket.Port.String()
			}
			if port == "" || !strings.HasSuffix(listen, ":"+port) {
				t.Errorf("%s: %s: a probe checks port %q, the hub listens on %q", source, w.name, port, listen)
			}
		}
		for _, svc := range find[*corev1.Service](objs) {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				continue
			}
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.pod.Labels)) || len(svc.Spec.Selector) == 0 {
				continue // another workload's Service (the manifests' etcd)
			}
			for _, p := range svc.Spec.Ports {
				if _, ok := ports[p.TargetPort.String()]; !ok {
					t.Errorf("%s: Service %s port %s targets %s, which %s does not declare", source, svc.Name, p.Name, p.TargetPort.String(), w.name)
				}
			}
		}
	}
}

// TestChartLints: helm lint --strict passes for every value set.
func TestChartLints(t *testing.T) {
	for name, values := range valueSets(t) {
		if out, err := helm(t, "lint", "--strict", chart, "-f", values); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

// TestChartRefuses: a values set the hub would refuse at start, or a
// replicated install without etcd, fails at render time with a message
// naming the value to set.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, "auth.existingSecret"},
		{[]string{"auth.tokens=t", "mode=replicated"}, "etcd.endpoints"},
		{[]string{"auth.tokens=t", "mode=replica"}, "mode must be single-node or replicated"},
		{[]string{"auth.tokens=t", "tls.enabled=true"}, "tls.secretName"},
		{[]string{"auth.tokens=t", "tls.clientCASecretName=ca"}, "needs tls.enabled"},
		{[]string{"auth.tokens=t", "cluster.enabled=true"}, "cluster.certSecretName"},
		{[]string{"auth.tokens=t", "cluster.enabled=true", "cluster.certSecretName=c", "cluster.mtls=pki"}, "clusterCaSecretName"},
		{[]string{"auth.tokens=t", "cluster.enabled=true", "cluster.certSecretName=c", "cluster.mtls=on"}, "cluster.mtls must be shared or pki"},
		{[]string{"auth.tokens=t", "mode=replicated", "etcd.endpoints={http://e:2379}", "replicaCount=1"}, "podDisruptionBudget"},
	} {
		args := []string{"template", "x", chart}
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		_, err := helm(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: want a refusal naming %q, got %v", tc.set, tc.want, err)
		}
	}
}

// TestRenderedObjectsDecode: every object of every value set decodes
// strictly into its type and is wired up.
func TestRenderedObjectsDecode(t *testing.T) {
	for name, values := range valueSets(t) {
		objs := render(t, "confighub", "confighub", values)
		checkWiring(t, name, objs)
		if len(workloads(objs)) != 1 {
			t.Errorf("%s: want one hub workload, got %d", name, len(workloads(objs)))
		}
		for _, o := range objs {
			if ns := o.Obj.(metav1.Object).GetNamespace(); ns != "confighub" {
				t.Errorf("%s: %s %s in namespace %q, want the release's", name, o.Kind, o.Name, ns)
			}
		}
	}
}

// manifests decodes the objects a kustomization lists, in its namespace.
func manifests(t *testing.T, dir string) []object {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var objs []object
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decodeAll(t, filepath.Join(filepath.Base(dir), r), b) {
			if m := o.Obj.(metav1.Object); o.Kind != "Namespace" && m.GetNamespace() == "" {
				m.SetNamespace(k.Namespace)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// TestManifestsDecode: the kustomize manifests decode strictly into their
// types and are wired up as the chart is.
func TestManifestsDecode(t *testing.T) {
	for _, dir := range []string{"single-node", "replicated"} {
		objs := manifests(t, filepath.Join(root, "deploy", dir))
		checkWiring(t, dir, objs)
		if len(workloads(objs)) < 1 {
			t.Errorf("%s: no workload", dir)
		}
	}
}

var (
	hubOnce     sync.Once
	hubPath     string
	hubFlagsSet map[string]bool
	hubErr      error
	helpFlag    = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
)

// TestMain removes the hub binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if hubPath != "" {
		os.RemoveAll(filepath.Dir(hubPath))
	}
	os.Exit(code)
}

// hub builds cmd/confighub once and reads the flags its --help lists.
func hub(t *testing.T) (bin string, flags map[string]bool) {
	t.Helper()
	hubOnce.Do(func() {
		dir, err := os.MkdirTemp("", "confighub-bin")
		if err != nil {
			hubErr = err
			return
		}
		hubPath = filepath.Join(dir, "confighub")
		build := exec.Command("go", "build", "-o", hubPath, "./cmd/confighub")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			hubErr = fmt.Errorf("go build ./cmd/confighub: %v\n%s", err, out)
			return
		}
		out, _ := exec.Command(hubPath, "--help").CombinedOutput() // --help exits non-zero by the flag package's rule
		hubFlagsSet = map[string]bool{}
		for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
			hubFlagsSet[m[1]] = true
		}
		if !hubFlagsSet["listen"] || !hubFlagsSet["auth-tokens"] {
			hubErr = fmt.Errorf("confighub --help lists no --listen or --auth-tokens:\n%s", out)
		}
	})
	if hubErr != nil {
		t.Fatal(hubErr)
	}
	return hubPath, hubFlagsSet
}

// TestChartFlagsExist: every flag the chart renders, in every value set, is
// one the hub lists in --help, and a non-loopback --listen comes with
// --auth-tokens (the hub refuses to start otherwise). The cluster
// listener's flags (--cluster-*) are checked once the hub's --help has
// --cluster-listen; until then the test logs that they went unchecked.
func TestChartFlagsExist(t *testing.T) {
	_, flags := hub(t)
	hybrid := flags["cluster-listen"]
	for name, values := range valueSets(t) {
		for _, w := range workloads(render(t, "confighub", "confighub", values)) {
			args := hubContainer(t, w).Args
			for _, a := range args {
				f, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !strings.HasPrefix(a, "--") {
					t.Errorf("%s: argument %q is not a --flag=value", name, a)
				} else if strings.HasPrefix(f, "cluster-") && !hybrid {
					t.Logf("%s: --%s unchecked: this hub has no --cluster-listen yet", name, f)
				} else if !flags[f] {
					t.Errorf("%s: --%s is not a flag of the hub (confighub --help)", name, f)
				}
			}
			if l, _ := flagValue(args, "listen"); !strings.HasPrefix(l, "127.") {
				if _, ok := flagValue(args, "auth-tokens"); !ok {
					t.Errorf("%s: --listen=%s without --auth-tokens: the hub would refuse to start", name, l)
				}
			}
		}
	}
}

// TestChartModes: each value set renders the shape its mode promises.
func TestChartModes(t *testing.T) {
	sets := valueSets(t)

	t.Run("single-node", func(t *testing.T) {
		objs := render(t, "confighub", "confighub", sets["single-node"])
		st := one[*appsv1.StatefulSet](t, objs)
		if st.Spec.Replicas == nil || *st.Spec.Replicas != 1 || len(st.Spec.VolumeClaimTemplates) != 1 {
			t.Errorf("want a StatefulSet of one with a claim, got replicas %v and %d claims", st.Spec.Replicas, len(st.Spec.VolumeClaimTemplates))
		}
		if n := len(find[*appsv1.Deployment](objs)) + len(find[*policyv1.PodDisruptionBudget](objs)); n != 0 {
			t.Errorf("single node renders %d Deployments or budgets", n)
		}
		args := hubContainer(t, workloads(objs)[0]).Args
		if v, _ := flagValue(args, "store"); v != "bolt" {
			t.Errorf("--store=%s, want bolt", v)
		}
		if len(find[*corev1.Secret](objs)) != 0 {
			t.Errorf("with auth.existingSecret the chart makes a Secret")
		}
	})

	t.Run("replicated", func(t *testing.T) {
		objs := render(t, "confighub", "confighub", sets["replicated"])
		d := one[*appsv1.Deployment](t, objs)
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			t.Errorf("want 3 replicas, got %v", d.Spec.Replicas)
		}
		if len(find[*appsv1.StatefulSet](objs)) != 0 {
			t.Errorf("replicated renders a StatefulSet: the chart runs no etcd")
		}
		pdb := one[*policyv1.PodDisruptionBudget](t, objs)
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("budget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
		}
		c := hubContainer(t, workloads(objs)[0])
		want := map[string]string{
			"store":          "etcd",
			"etcd-endpoints": "https://etcd-0.etcd:2379,https://etcd-1.etcd:2379,https://etcd-2.etcd:2379",
			"etcd-ca":        "/etc/confighub-etcd-tls/ca.crt",
			"etcd-cert":      "/etc/confighub-etcd-tls/tls.crt",
			"etcd-key":       "/etc/confighub-etcd-tls/tls.key",
			"replica-id":     "$(POD_NAME)",
		}
		for f, v := range want {
			if got, _ := flagValue(c.Args, f); got != v {
				t.Errorf("--%s=%q, want %q", f, got, v)
			}
		}
		if _, ok := flagValue(c.Args, "data-dir"); ok {
			t.Errorf("replicated renders --data-dir")
		}
		var etcdAuth int
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "confighub-etcd-auth" {
				etcdAuth++
			}
		}
		if etcdAuth != 2 {
			t.Errorf("want the etcd user and password from confighub-etcd-auth, got %d variables", etcdAuth)
		}
		if c.LivenessProbe.TCPSocket == nil || c.ReadinessProbe.GRPC == nil {
			t.Errorf("want a grpc readiness probe (NOT_SERVING while etcd is away) and a TCP liveness probe")
		}
		sec := one[*corev1.Secret](t, objs)
		if !strings.Contains(string(sec.Data["tokens"]), "kic-token push") {
			t.Errorf("the tokens Secret holds %q", sec.Data["tokens"])
		}
		if vol := podVolume(workloads(objs)[0], "auth-tokens"); vol == nil || vol.Secret == nil || vol.Secret.SecretName != sec.Name {
			t.Errorf("the auth-tokens volume does not mount the Secret %s", sec.Name)
		}
	})

	t.Run("tls", func(t *testing.T) {
		objs := render(t, "confighub", "confighub", sets["tls"])
		c := hubContainer(t, workloads(objs)[0])
		for f, v := range map[string]string{"tls-cert": "/etc/confighub-tls/tls.crt", "tls-key": "/etc/confighub-tls/tls.key", "tls-client-ca": "/etc/confighub-client-ca/ca.crt"} {
			if got, _ := flagValue(c.Args, f); got != v {
				t.Errorf("--%s=%q, want %q", f, got, v)
			}
		}
		if c.ReadinessProbe.GRPC != nil || c.LivenessProbe.GRPC != nil {
			t.Errorf("a grpc probe (plaintext only) against a TLS listener")
		}
		if v := podVolume(workloads(objs)[0], "client-ca"); v == nil || v.Secret == nil || v.Secret.SecretName != "confighub-client-ca" {
			t.Errorf("no client-ca volume from confighub-client-ca")
		}
		sm := one[*monitoringv1.ServiceMonitor](t, objs)
		svc := one[*corev1.Service](t, objs)
		if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)) || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].TargetPort == nil || sm.Spec.Endpoints[0].TargetPort.String() != "metrics" {
			t.Errorf("the ServiceMonitor does not scrape the metrics port of %s: %+v", svc.Name, sm.Spec)
		}
	})

	clusterChecks := func(t *testing.T, values, mtls, ca string) {
		objs := render(t, "confighub", "confighub", values)
		c := hubContainer(t, workloads(objs)[0])
		for f, v := range map[string]string{
			"cluster-listen":   "0.0.0.0:8005",
			"cluster-cert":     "/etc/confighub-cluster/tls.crt",
			"cluster-cert-key": "/etc/confighub-cluster/tls.key",
			"cluster-mtls":     mtls,
			"cluster-ca-cert":  ca,
		} {
			if got, _ := flagValue(c.Args, f); got != v {
				t.Errorf("--%s=%q, want %q", f, got, v)
			}
		}
		var svc *corev1.Service
		for _, s := range find[*corev1.Service](objs) {
			if s.Name == "confighub-cluster" {
				svc = s
			}
		}
		if svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8005 || svc.Spec.Ports[0].TargetPort.String() != "cluster" {
			t.Fatalf("want the Service confighub-cluster on 8005, got %+v", svc)
		}
	}
	t.Run("cluster", func(t *testing.T) {
		clusterChecks(t, sets["cluster"], "shared", "")
	})
	t.Run("cluster-pki-replicated", func(t *testing.T) {
		clusterChecks(t, sets["cluster-pki-replicated"], "pki", "/etc/confighub-cluster-ca/ca.crt")
	})
	t.Run("without-cluster", func(t *testing.T) {
		for _, name := range []string{"single-node", "replicated", "tls"} {
			objs := render(t, "confighub", "confighub", sets[name])
			for _, a := range hubContainer(t, workloads(objs)[0]).Args {
				if strings.HasPrefix(a, "--cluster-") {
					t.Errorf("%s renders %s with the cluster listener off", name, a)
				}
			}
			if n := len(find[*corev1.Service](objs)); n != 1 {
				t.Errorf("%s renders %d Services, want 1", name, n)
			}
		}
	})
}

func podVolume(w workload, name string) *corev1.Volume {
	for i, v := range w.pod.Spec.Volumes {
		if v.Name == name {
			return &w.pod.Spec.Volumes[i]
		}
	}
	return nil
}

// substance clears what differs between a chart and hand-written manifests
// without changing what runs: labels and annotations (the chart's carry the
// release and a checksum; selectors are checked by checkWiring), the pull
// policy Kubernetes defaults, an explicit ClusterIP type, the sinks file's
// key order.
func substance(t *testing.T, o object) any {
	t.Helper()
	clear := func(m *metav1.ObjectMeta) { m.Labels, m.Annotations = nil, nil }
	switch v := o.Obj.(type) {
	case *appsv1.StatefulSet:
		c := v.DeepCopy()
		clear(&c.ObjectMeta)
		clear(&c.Spec.Template.ObjectMeta)
		c.Spec.Selector = nil
		for i := range c.Spec.Template.Spec.Containers {
			c.Spec.Template.Spec.Containers[i].ImagePullPolicy = ""
		}
		for i := range c.Spec.VolumeClaimTemplates {
			clear(&c.Spec.VolumeClaimTemplates[i].ObjectMeta)
		}
		return c
	case *corev1.Service:
		c := v.DeepCopy()
		clear(&c.ObjectMeta)
		c.Spec.Selector = nil
		if c.Spec.Type == "" {
			c.Spec.Type = corev1.ServiceTypeClusterIP
		}
		return c
	case *corev1.ConfigMap:
		c := v.DeepCopy()
		clear(&c.ObjectMeta)
		for k, s := range c.Data {
			var parsed any
			if err := yaml.Unmarshal([]byte(s), &parsed); err != nil {
				t.Fatalf("%s: ConfigMap %s key %s: %v", o.Source, c.Name, k, err)
			}
			canon, _ := yaml.Marshal(parsed)
			c.Data[k] = string(canon)
		}
		return c
	}
	t.Fatalf("%s: no comparison for %s", o.Source, o.Kind)
	return nil
}

// TestChartSingleNodeMatchesManifests: helm template of the single-node
// value set (release confighub in namespace confighub) makes the objects of
// deploy/single-node, the Namespace aside (helm install --create-namespace
// makes it), equal in everything but labels, annotations and defaults.
// The manifests stay hand-written beside the chart, for kubectl apply -k
// without helm; this test keeps the two from drifting apart.
func TestChartSingleNodeMatchesManifests(t *testing.T) {
	chartObjs := map[string]object{}
	for _, o := range render(t, "confighub", "confighub", valueSets(t)["single-node"], "--set", "image.tag=latest") {
		chartObjs[o.Kind+"/"+o.Name] = o
	}
	seen := map[string]bool{}
	for _, m := range manifests(t, filepath.Join(root, "deploy", "single-node")) {
		if m.Kind == "Namespace" {
			continue
		}
		key := m.Kind + "/" + m.Name
		seen[key] = true
		c, ok := chartObjs[key]
		if !ok {
			t.Errorf("the chart renders no %s, which deploy/single-node has", key)
			continue
		}
		want, got := substance(t, m), substance(t, c)
		wantY, _ := yaml.Marshal(want)
		gotY, _ := yaml.Marshal(got)
		if !bytes.Equal(wantY, gotY) {
			t.Errorf("%s differs from deploy/single-node:\n%s", key, lineDiff(string(wantY), string(gotY)))
		}
	}
	var extra []string
	for key := range chartObjs {
		if !seen[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("the chart renders %v, which deploy/single-node lacks", extra)
	}
}

// lineDiff lists the lines only one side has, marked - (manifests) and +
// (chart).
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if count[l] > 0 {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if count[l] < 0 {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
