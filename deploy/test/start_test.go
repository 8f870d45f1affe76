package deploytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestChartSingleNodeStarts: the hub runs with what the chart renders for
// a single node whose tokens Secret and sinks ConfigMap the chart makes:
// its args, with every mounted path moved under a temporary folder that
// holds the rendered ConfigMap's and Secret's files and both listeners
// moved to loopback, start a hub that loads the tokens and puts the sinks
// (a sink the hub refuses stops it at start), keeps its store on the data
// volume, serves, and exits 0 on SIGTERM.
func TestChartSingleNodeStarts(t *testing.T) {
	bin, _ := hub(t)
	objs := render(t, "confighub", "confighub", "",
		"--set", "auth.tokens=ci-token admin",
		"--set-json", `sinks=[{"name":"out","file":{"path":"out.json"}},{"name":"gw","kong":{"address":"http://127.0.0.1:1","status_interval":"30s"}}]`)
	ws := workloads(objs)
	if len(ws) != 1 {
		t.Fatalf("want one workload, got %d", len(ws))
	}
	w := ws[0]
	c := hubContainer(t, w)
	tmp := t.TempDir()

	// The kubelet's part: every volume's files at its mount path.
	configMaps := map[string]*corev1.ConfigMap{}
	for _, cm := range find[*corev1.ConfigMap](objs) {
		configMaps[cm.Name] = cm
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range find[*corev1.Secret](objs) {
		secrets[s.Name] = s
	}
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(tmp, m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v := podVolume(w, m.Name)
		switch {
		case v == nil: // the claim of a StatefulSet: an empty volume
		case v.ConfigMap != nil:
			cm := configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Fatalf("volume %s: the chart renders no ConfigMap %s", m.Name, v.ConfigMap.Name)
			}
			for k, data := range cm.Data {
				write(t, filepath.Join(dir, k), []byte(data), 0o644)
			}
		case v.Secret != nil:
			s := secrets[v.Secret.SecretName]
			if s == nil {
				t.Fatalf("volume %s: the chart renders no Secret %s", m.Name, v.Secret.SecretName)
			}
			for k, data := range s.Data {
				write(t, filepath.Join(dir, k), data, os.FileMode(*v.Secret.DefaultMode))
			}
		default:
			t.Fatalf("volume %s: no files for its kind", m.Name)
		}
	}

	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		name, value, _ := strings.Cut(a, "=")
		switch {
		case name == "--listen" || name == "--metrics-listen":
			a = name + "=127.0.0.1:0"
		case strings.HasPrefix(value, "/"):
			a = name + "=" + filepath.Join(tmp, value)
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = tmp
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var log []string
	deadline := time.After(time.Minute) // a bound for a hung start, not a synchronisation
	for serving := false; !serving; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the hub exited before serving (%v):\n%s", cmd.Wait(), strings.Join(log, "\n"))
			}
			log = append(log, l)
			serving = strings.Contains(l, "confighub serving")
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the hub did not serve within a minute:\n%s", strings.Join(log, "\n"))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		log = append(log, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the hub exited with %v after SIGTERM:\n%s", err, strings.Join(log, "\n"))
	}
	if _, err := os.Stat(filepath.Join(tmp, "data", "confighub.db")); err != nil {
		t.Errorf("the store is not on the data volume: %v", err)
	}
}

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}
