package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pushd/pushd/queue"
)

// The deploy/ files cannot run here (no container engine), so this test holds them to the
// binary: every pushd container of deploy/compose.yaml and deploy/k8s/*.yaml is configured
// through the real flag parser with its arguments and environment, and its ports and probes are
// checked against the addresses that configuration listens on. deploy/kafka/topics.sh and
// deploy/Dockerfile are checked against the code too.

const deployDir = "../../deploy"

// podSpec is one pushd container as a manifest runs it.
type podSpec struct {
	name  string
	args  []string          // after the binary
	env   map[string]string // environment, ConfigMap and Secret included
	ports map[string]int    // k8s: port name → containerPort; compose: "host:<n>" → container port
	// declaresAll: every port pushd listens on must be declared (k8s); compose publishes only
	// the ports outside callers need (the gateway's).
	declaresAll bool
	// probes by kind (readiness, liveness, healthcheck, metrics) → port name or number and path
	probes []probe
}

type probe struct {
	kind string
	port string // a port name or number
	path string
}

// servedPaths answer on the API port and on the ops port alike (api.Server, opsServer).
var servedPaths = []string{"/livez", "/healthz", "/readyz", "/metrics"}

func TestDeployManifests(t *testing.T) {
	for _, src := range []struct {
		name string
		pods func(t *testing.T) []podSpec
	}{
		{"compose.yaml", composePods},
		{"k8s", k8sPods},
	} {
		t.Run(src.name, func(t *testing.T) {
			pods := src.pods(t)
			roles := map[string]bool{}
			for _, p := range pods {
				t.Run(p.name, func(t *testing.T) {
					for _, r := range checkPod(t, p) {
						roles[r] = true
					}
				})
			}
			for _, r := range knownRoles {
				if !roles[r] {
					t.Errorf("no container runs role %s", r)
				}
			}
		})
	}
}

// checkPod configures p as pushd would and checks its ports and probes; it returns its roles.
func checkPod(t *testing.T, p podSpec) []string {
	if len(p.args) == 0 || p.args[0] != "serve" {
		t.Fatalf("runs %q, want pushd serve", p.args)
	}
	flags := serveFlagNames(t)
	for k := range p.env {
		if strings.HasPrefix(k, "PUSHD_") && k != "PUSHD_ADMIN_TOKEN" && !flags[k] {
			t.Errorf("environment %s names no flag of pushd serve", k)
		}
	}
	clearPushdEnv(t)
	for k, v := range p.env {
		t.Setenv(k, v)
	}
	cfg, err := parseServeFlags(p.args[1:], newFlagSet())
	if err != nil {
		t.Fatalf("pushd serve %s: %v", strings.Join(p.args[1:], " "), err)
	}
	// The ports this configuration listens on, and what each serves.
	listens := map[int]string{} // port → "ops" (probes and metrics) or "ws"
	if cfg.Has("api") {
		listens[portOf(t, "--addr", cfg.Addr)] = "ops"
	}
	if cfg.OpsAddr != "" {
		listens[portOf(t, "--ops-addr", cfg.OpsAddr)] = "ops"
	} else if !cfg.Has("api") {
		t.Errorf("roles %v without --ops-addr: nothing answers probes or scrapes", cfg.Roles)
	}
	if cfg.Has("gateway") {
		listens[portOf(t, "--gateway-addr", cfg.GatewayAddr)] = "ws"
	}
	for name, port := range p.ports {
		if _, ok := listens[port]; !ok {
			t.Errorf("port %s (%d) is not one pushd listens on with roles %v (%v)", name, port, cfg.Roles, listens)
		}
	}
	for port, what := range listens {
		if !slices.Contains(mapValues(p.ports), port) && (what == "ws" || p.declaresAll) {
			t.Errorf("pushd listens on %d (%s) but the manifest declares no such port", port, what)
		}
	}
	kinds := map[string]bool{}
	for _, pr := range p.probes {
		kinds[pr.kind] = true
		port, err := strconv.Atoi(pr.port)
		if err != nil {
			var ok bool
			if port, ok = p.ports[pr.port]; !ok {
				t.Errorf("%s probe on port %q, which is not declared", pr.kind, pr.port)
				continue
			}
		}
		if listens[port] != "ops" {
			t.Errorf("%s probe %s on port %d, which serves no ops endpoints (%v)", pr.kind, pr.path, port, listens)
		}
		if !slices.Contains(servedPaths, pr.path) {
			t.Errorf("%s probe of %s, which pushd does not serve", pr.kind, pr.path)
		}
		switch {
		case pr.kind == "readiness" && pr.path != "/readyz":
			t.Errorf("readiness probe of %s, want /readyz", pr.path)
		case pr.kind == "liveness" && pr.path != "/livez" && pr.path != "/healthz":
			t.Errorf("liveness probe of %s, want /livez", pr.path)
		case pr.kind == "metrics" && pr.path != "/metrics":
			t.Errorf("metrics scraped at %s", pr.path)
		}
	}
	if p.declaresAll && !(kinds["readiness"] && kinds["liveness"]) || !p.declaresAll && !kinds["healthcheck"] {
		t.Errorf("no readiness and liveness probes")
	}
	return cfg.Roles
}

func mapValues(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func portOf(t *testing.T, flag, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s %q has no port", flag, addr)
	}
	return n
}

// serveFlagNames is the environment variable of every flag of pushd serve.
func serveFlagNames(t *testing.T) map[string]bool {
	t.Helper()
	clearPushdEnv(t)
	fs := newFlagSet()
	if _, err := parseServeFlags(nil, fs); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { out[envName(f.Name)] = true })
	return out
}

// clearPushdEnv unsets every PUSHD_* variable for the test (restored after it), the test
// process's own included (gateway_env_test.go sets one).
func clearPushdEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PUSHD_") {
			t.Setenv(k, "")
			_ = os.Unsetenv(k)
		}
	}
}

// composePods reads the pushd services of compose.yaml (YAML merge keys resolved).
func composePods(t *testing.T) []podSpec {
	var f struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Entrypoint  []string          `yaml:"entrypoint"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	readYAML(t, filepath.Join(deployDir, "compose.yaml"), &f)
	var out []podSpec
	for name, s := range f.Services {
		if !strings.HasPrefix(s.Image, "pushd:") {
			continue
		}
		p := podSpec{name: name, args: s.Command, env: s.Environment, ports: map[string]int{}}
		for _, m := range s.Ports {
			i := strings.LastIndex(m, ":")
			n, err := strconv.Atoi(m[i+1:])
			if i < 0 || err != nil {
				t.Fatalf("service %s: port mapping %q", name, m)
			}
			p.ports["host:"+m[:i]] = n
		}
		if len(s.Healthcheck.Test) > 0 {
			u, err := url.Parse(s.Healthcheck.Test[len(s.Healthcheck.Test)-1])
			if err != nil || u.Port() == "" {
				t.Fatalf("service %s: healthcheck %q does not end in a URL", name, s.Healthcheck.Test)
			}
			p.probes = append(p.probes, probe{"healthcheck", u.Port(), u.Path})
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Fatal("compose.yaml runs no pushd service")
	}
	return out
}

// k8sObject is the part of a Kubernetes object this test reads.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct { // Service
			Name       string `yaml:"name"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// k8sPods reads the Deployments of the files kustomization.yaml lists, with the ConfigMaps
// and Secrets their envFrom names.
func k8sPods(t *testing.T) []podSpec {
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, filepath.Join(deployDir, "k8s", "kustomization.yaml"), &kust)
	onDisk, _ := filepath.Glob(filepath.Join(deployDir, "k8s", "*.yaml"))
	for _, f := range onDisk {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(kust.Resources, b) {
			t.Errorf("k8s/%s is not in kustomization.yaml's resources", b)
		}
	}
	var objs []k8sObject
	services := map[string]map[string]string{} // Service name → selector
	for _, r := range kust.Resources {
		b, err := os.ReadFile(filepath.Join(deployDir, "k8s", r))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			var raw struct {
				Spec struct {
					Selector map[string]any `yaml:"selector"`
				} `yaml:"spec"`
			}
			var node yaml.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("k8s/%s: %v", r, err)
			}
			if err := node.Decode(&o); err != nil {
				t.Fatalf("k8s/%s: %v", r, err)
			}
			if o.Kind == "Service" {
				_ = node.Decode(&raw)
				sel := map[string]string{}
				for k, v := range raw.Spec.Selector {
					sel[k] = fmt.Sprint(v)
				}
				services[o.Metadata.Name] = sel
			}
			objs = append(objs, o)
		}
	}
	env := map[string]map[string]string{}
	for _, o := range objs {
		switch o.Kind {
		case "ConfigMap":
			env["ConfigMap/"+o.Metadata.Name] = o.Data
		case "Secret":
			env["Secret/"+o.Metadata.Name] = o.StringData
		}
	}
	var out []podSpec
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			if c.Image != "pushd" {
				continue
			}
			if len(c.Command) > 0 {
				t.Errorf("%s: a command replaces the image's pushd entrypoint", o.Metadata.Name)
			}
			p := podSpec{name: o.Metadata.Name, args: c.Args, env: map[string]string{}, ports: map[string]int{}, declaresAll: true}
			for _, ef := range c.EnvFrom {
				ref := ""
				if ef.ConfigMapRef != nil {
					ref = "ConfigMap/" + ef.ConfigMapRef.Name
				} else if ef.SecretRef != nil {
					ref = "Secret/" + ef.SecretRef.Name
				}
				vals, ok := env[ref]
				if !ok {
					t.Errorf("%s: envFrom %s, which no listed file defines", o.Metadata.Name, ref)
				}
				for k, v := range vals {
					p.env[k] = v
				}
			}
			for _, e := range c.Env {
				p.env[e.Name] = e.Value
			}
			for _, cp := range c.Ports {
				p.ports[cp.Name] = cp.ContainerPort
			}
			if c.ReadinessProbe != nil {
				p.probes = append(p.probes, probe{"readiness", c.ReadinessProbe.HTTPGet.Port, c.ReadinessProbe.HTTPGet.Path})
			}
			if c.LivenessProbe != nil {
				p.probes = append(p.probes, probe{"liveness", c.LivenessProbe.HTTPGet.Port, c.LivenessProbe.HTTPGet.Path})
			}
			if a := o.Spec.Template.Metadata.Annotations; a["prometheus.io/scrape"] == "true" {
				p.probes = append(p.probes, probe{"metrics", a["prometheus.io/port"], a["prometheus.io/path"]})
			}
			out = append(out, p)
		}
	}
	// Every Service selects a Deployment and targets a port its container declares.
	for _, o := range objs {
		if o.Kind != "Service" {
			continue
		}
		var target *k8sObject
		for i := range objs {
			d := &objs[i]
			if d.Kind == "Deployment" && labelsMatch(services[o.Metadata.Name], d.Spec.Template.Metadata.Labels) {
				target = d
			}
		}
		if target == nil {
			t.Errorf("Service %s selects no Deployment", o.Metadata.Name)
			continue
		}
		for _, sp := range o.Spec.Ports {
			found := false
			for _, c := range target.Spec.Template.Spec.Containers {
				for _, cp := range c.Ports {
					found = found || cp.Name == sp.TargetPort || strconv.Itoa(cp.ContainerPort) == sp.TargetPort
				}
			}
			if !found {
				t.Errorf("Service %s targets port %s, which %s does not declare", o.Metadata.Name, sp.TargetPort, target.Metadata.Name)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("k8s runs no pushd container")
	}
	return out
}

func labelsMatch(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestDeployTopics: topics.sh creates the topics of the code with its partition counts.
func TestDeployTopics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "kafka", "topics.sh"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^create (\S+)\s+(\d+)\s`)
	got := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(queue.DefaultPartitions) {
		t.Errorf("topics.sh creates %v, the code uses %v (queue.DefaultPartitions)", got, queue.DefaultPartitions)
	}
}

// TestDeployDockerfile: the image builds the binaries that exist with the Go of go.mod, and
// exposes the ports the manifests use.
func TestDeployDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goVersion == nil || !strings.Contains(df, "FROM golang:"+string(goVersion[1])+" AS build") {
		t.Errorf("the build stage is not golang:%s, the go of go.mod (GOTOOLCHAIN=local cannot build with an older Go)", goVersion[1])
	}
	for _, pkg := range regexp.MustCompile(`go build [^\n]*-o \S+ (\./\S+)`).FindAllStringSubmatch(df, -1) {
		if _, err := os.Stat(filepath.Join("../..", pkg[1], "main.go")); err != nil {
			t.Errorf("the Dockerfile builds %s, which is no command: %v", pkg[1], err)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^EXPOSE (.*)$`).FindAllStringSubmatch(df, -1) {
		if got := strings.Fields(m[1]); !slices.Equal(got, []string{"8080", "8090", "9090"}) {
			t.Errorf("EXPOSE %v, want the api (--addr), gateway (--gateway-addr) and ops ports 8080 8090 9090", got)
		}
	}
	clearPushdEnv(t)
	cfg, err := parseServeFlags(nil, newFlagSet())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":8080" || cfg.GatewayAddr != ":8090" {
		t.Errorf("defaults --addr %s --gateway-addr %s moved: update deploy/", cfg.Addr, cfg.GatewayAddr)
	}
}
