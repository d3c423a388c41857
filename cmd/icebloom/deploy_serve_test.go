package main

// Tests of the deployment of `icebloom serve`: docs/kubernetes/serve.yaml
// (a Deployment and its Service) and the serve service of
// docker-compose.yml. As in deploy_test.go, nothing runs: the files are
// decoded, and the command lines they give icebloom are checked against
// what icebloom accepts.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Deployment and Service are decoded strictly (KnownFields): each key
// of the manifest must be one these types name, so a misspelt or misplaced
// key fails here instead of being dropped by the API server. They name the
// keys serve.yaml uses; the parts shared with the Job manifests' checks are
// deploy_test.go's types, inlined.

type kubeObjectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type kubeDeployment struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   kubeObjectMeta `yaml:"metadata"`
	Spec       struct {
		Replicas             *int `yaml:"replicas"`
		RevisionHistoryLimit *int `yaml:"revisionHistoryLimit"`
		Strategy             struct {
			Type          string `yaml:"type"`
			RollingUpdate *struct {
				MaxSurge       yaml.Node `yaml:"maxSurge"`
				MaxUnavailable yaml.Node `yaml:"maxUnavailable"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata kubeObjectMeta   `yaml:"metadata"`
			Spec     kubeServePodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type kubeServePodSpec struct {
	AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds *int  `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		kubeSecurityContext `yaml:",inline"`
		RunAsGroup          *int64 `yaml:"runAsGroup"`
		FSGroup             *int64 `yaml:"fsGroup"`
		SeccompProfile      struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []kubeServeContainer `yaml:"containers"`
	Volumes    []kubeVolume         `yaml:"volumes"`
}

type kubeServeContainer struct {
	kubeContainer   `yaml:",inline"`
	ImagePullPolicy string `yaml:"imagePullPolicy"`
	Ports           []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	ReadinessProbe *kubeProbe `yaml:"readinessProbe"`
	LivenessProbe  *kubeProbe `yaml:"livenessProbe"`
}

type kubeProbe struct {
	HTTPGet *struct {
		Path   string    `yaml:"path"`
		Port   yaml.Node `yaml:"port"` // a number or a port's name
		Scheme string    `yaml:"scheme"`
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

type kubeVolume struct {
	Name   string `yaml:"name"`
	Secret *struct {
		SecretName  string `yaml:"secretName"`
		DefaultMode *int   `yaml:"defaultMode"`
	} `yaml:"secret"`
	EmptyDir *struct{} `yaml:"emptyDir"`
}

type kubeService struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   kubeObjectMeta `yaml:"metadata"`
	Spec       struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"` // a number or a port's name
			Protocol   string    `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// deployLoadKubeStrict decodes the documents of the manifest at path into
// vs, in order, refusing unknown keys and documents beyond len(vs).
func deployLoadKubeStrict(t *testing.T, path string, vs ...any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	for i, v := range vs {
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: document %d: %v", path, i+1, err)
		}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: more than %d documents (%v)", path, len(vs), err)
	}
}

// serveCommandField returns the Args field of the serve command (its
// struct type).
func serveCommandField(t *testing.T) reflect.StructField {
	t.Helper()
	ty := reflect.TypeFor[Args]()
	for i := range ty.NumField() {
		if f := ty.Field(i); slices.Contains(strings.Split(f.Tag.Get("arg"), ","), "subcommand:serve") {
			return f
		}
	}
	t.Fatal("icebloom has no serve command")
	return reflect.StructField{}
}

// serveArgs is a serve command line as the checks below read it: its
// serve flags by name (the last value of each, "" for a switch), and
// icebloom's parse of the whole line.
type serveArgs struct {
	flags  map[string]string
	parsed *Args
}

// deployServeArgs splits argv at "serve", checks the serve flags against
// those icebloom's serve command accepts, and parses the line with
// icebloom's parser. Flags must be written --flag=value, or --switch: a flag's value
// as a separate word would be taken for a flag of its own here.
func deployServeArgs(t *testing.T, what string, argv []string) serveArgs {
	t.Helper()
	i := slices.Index(argv, "serve")
	if i < 0 {
		t.Fatalf("%s: %q: no serve command", what, argv)
	}
	field := serveCommandField(t)
	var known []string
	var collect func(reflect.Type)
	collect = func(ty reflect.Type) {
		for j := range ty.NumField() {
			f := ty.Field(j)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				collect(f.Type)
				continue
			}
			for part := range strings.SplitSeq(f.Tag.Get("arg"), ",") {
				if strings.HasPrefix(part, "--") {
					known = append(known, part)
				}
			}
		}
	}
	collect(field.Type.Elem())
	sa := serveArgs{flags: map[string]string{}}
	for _, a := range argv[i+1:] {
		name, value, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") || !slices.Contains(known, name) {
			t.Errorf("%s: serve %q: not a flag icebloom serve accepts (%s)", what, a, strings.Join(known, " "))
			continue
		}
		sa.flags[name] = value
	}
	sa.parsed = deployParseArgs(t, what, argv)
	if reflect.ValueOf(sa.parsed).Elem().FieldByIndex(field.Index).IsNil() {
		t.Errorf("%s: %q does not run serve", what, argv)
	}
	return sa
}

// port is the port of a listen address.
func (sa serveArgs) port(t *testing.T, what string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(sa.flags["--listen"])
	if err != nil {
		t.Fatalf("%s: --listen %q: %v", what, sa.flags["--listen"], err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		t.Errorf("%s: --listen %s: a container must listen on 0.0.0.0 to be reached (serve's default is loopback)", what, sa.flags["--listen"])
	}
	return port
}

// kubePort resolves a probe's or Service's port (a number, or the name of a
// container port) to the container port, or "" for none.
func kubePort(n yaml.Node, c kubeServeContainer) string {
	if _, err := strconv.Atoi(n.Value); err == nil && n.Tag == "!!int" {
		return n.Value
	}
	for _, p := range c.Ports {
		if p.Name == n.Value {
			return strconv.Itoa(p.ContainerPort)
		}
	}
	return ""
}

// kubeSecurityContexts returns the pod's and first container's
// securityContext of a manifest's document as decoded YAML, to compare
// manifests whatever their kinds: template.spec of a Deployment or Job,
// jobTemplate.spec.template.spec of a CronJob.
func kubeSecurityContexts(t *testing.T, path string, doc int) (pod, container any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var m map[string]any
	for range doc {
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: document %d: %v", path, doc, err)
		}
	}
	get := func(v any, key string) any {
		mm, _ := v.(map[string]any)
		return mm[key]
	}
	spec := get(m, "spec")
	if jt := get(spec, "jobTemplate"); jt != nil {
		spec = get(jt, "spec")
	}
	podSpec := get(get(spec, "template"), "spec")
	containers, _ := get(podSpec, "containers").([]any)
	if podSpec == nil || len(containers) == 0 {
		t.Fatalf("%s: document %d: no pod template with containers", path, doc)
	}
	return get(podSpec, "securityContext"), get(containers[0], "securityContext")
}

// deployIntOrUnset formats an optional number of a manifest.
func deployIntOrUnset(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}

// TestDeployKubernetesServe checks docs/kubernetes/serve.yaml: a Deployment
// of two or more `icebloom serve` pods sharing plans (--replica-secret-file),
// as safe as the CronJob's (the same security contexts; deployCheckKubePod's
// checks), in proxy mode with TLS and --sync-on-commit, its secrets from
// Secret volumes; probes on the serve port's /readyz and /healthz; and a
// Service reaching that port.
func TestDeployKubernetesServe(t *testing.T) {
	dir := filepath.Join(deployRepoRoot(t), "docs", "kubernetes")
	path := filepath.Join(dir, "serve.yaml")
	var dep kubeDeployment
	var svc kubeService
	deployLoadKubeStrict(t, path, &dep, &svc)
	what := "serve.yaml"
	if dep.APIVersion != "apps/v1" || dep.Kind != "Deployment" {
		t.Fatalf("%s: first document %s %s, want apps/v1 Deployment", what, dep.APIVersion, dep.Kind)
	}
	if svc.APIVersion != "v1" || svc.Kind != "Service" {
		t.Fatalf("%s: second document %s %s, want v1 Service", what, svc.APIVersion, svc.Kind)
	}
	// Replicas share plans through --replica-secret-file (checked with
	// the other secrets below): a plan id or plan task of one is answered
	// by the others.
	if r := dep.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("%s: replicas %s, want 2 or more, sharing plans through --replica-secret-file", what, deployIntOrUnset(r))
	}
	pod := dep.Spec.Template.Spec
	labels := dep.Spec.Template.Metadata.Labels
	for k, v := range dep.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("%s: selector %s=%s does not match the pod template's labels %v", what, k, v, labels)
		}
	}
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("%s: the Service selects no pods", what)
	}
	for k, v := range svc.Spec.Selector {
		if labels[k] != v {
			t.Errorf("%s: Service selector %s=%s does not match the pod template's labels %v", what, k, v, labels)
		}
	}
	if a := pod.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("%s: automountServiceAccountToken is not false: serve needs no Kubernetes API", what)
	}

	// The same security contexts as the CronJob's.
	podSC, containerSC := kubeSecurityContexts(t, path, 1)
	cronPodSC, cronContainerSC := kubeSecurityContexts(t, filepath.Join(dir, "cronjob.yaml"), 1)
	if !reflect.DeepEqual(podSC, cronPodSC) || !reflect.DeepEqual(containerSC, cronContainerSC) {
		t.Errorf("%s: security contexts %v / %v, want the CronJob's %v / %v", what, podSC, containerSC, cronPodSC, cronContainerSC)
	}

	// The checks of a Job's pod, but for its restart policy (a
	// Deployment's pods restart Always) and its catalog: serve's is
	// --upstream, which its syncs open as --catalog=rest --uri=UPSTREAM.
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want icebloom alone", what, len(pod.Containers))
	}
	c := pod.Containers[0]
	asJob := c.kubeContainer
	asJob.Args = slices.Clone(c.Args)
	for _, a := range c.Args {
		if u, ok := strings.CutPrefix(a, "--upstream="); ok {
			asJob.Args = append([]string{"--catalog=rest", "--uri=" + u}, asJob.Args...)
		}
	}
	deployCheckKubePod(t, what, kubePodSpec{
		RestartPolicy:   "Never",
		SecurityContext: pod.SecurityContext.kubeSecurityContext,
		Containers:      []kubeContainer{asJob},
	}, nil)
	sa := deployServeArgs(t, what, c.Args)

	// The memory budget lies within Go's soft memory limit, and that within
	// the container's limit.
	budget, err := strconv.ParseInt(sa.flags["--memory-budget-mib"], 10, 64)
	if err != nil {
		t.Errorf("%s: --memory-budget-mib %q: %v", what, sa.flags["--memory-budget-mib"], err)
	}
	var goMemLimit string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" && e.Value != nil {
			goMemLimit = *e.Value
		}
	}
	soft, limit := deployMiB(goMemLimit, "MiB", "GiB"), deployMiB(c.Resources.Limits["memory"], "Mi", "Gi")
	if soft <= 0 || limit <= 0 || !(budget < soft && soft < limit) {
		t.Errorf("%s: --memory-budget-mib %d, GOMEMLIMIT %q, memory limit %q: want the budget below GOMEMLIMIT below the limit",
			what, budget, goMemLimit, c.Resources.Limits["memory"])
	}

	// Proxy mode, TLS, sync on commit.
	if u := sa.flags["--upstream"]; !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		t.Errorf("%s: --upstream %q, want the REST catalog's URL", what, u)
	}
	if _, ok := sa.flags["--sync-on-commit"]; !ok {
		t.Errorf("%s: no --sync-on-commit", what)
	}
	if _, ok := sa.flags["--bearer-token-file"]; ok {
		t.Errorf("%s: --bearer-token-file is catalog mode's; in proxy mode the upstream checks credentials", what)
	}
	volumes := map[string]kubeVolume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	// fromSecret checks that a file flag names a file of a Secret volume.
	fromSecret := func(flag string) {
		t.Helper()
		file := sa.flags[flag]
		if file == "" {
			t.Errorf("%s: no %s", what, flag)
			return
		}
		for _, m := range c.VolumeMounts {
			if rel, err := filepath.Rel(m.MountPath, file); err == nil && !strings.HasPrefix(rel, "..") {
				if v := volumes[m.Name]; v.Secret == nil || v.Secret.SecretName == "" || !m.ReadOnly {
					t.Errorf("%s: %s %s is on volume %s, want a Secret's, mounted read-only", what, flag, file, m.Name)
				}
				return
			}
		}
		t.Errorf("%s: %s %s is on no volume", what, flag, file)
	}
	for _, flag := range []string{"--tls-cert", "--tls-key", "--sync-token-file", "--replica-secret-file"} {
		fromSecret(flag)
	}

	// The probes and the Service reach the port serve listens on.
	port := sa.port(t, what)
	for name, p := range map[string]*kubeProbe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s: no HTTP probe of %s", what, name)
		case p.HTTPGet.Path != name:
			t.Errorf("%s: probe of %s gets %s", what, name, p.HTTPGet.Path)
		case kubePort(p.HTTPGet.Port, c) != port:
			t.Errorf("%s: probe of %s on port %s, serve listens on %s", what, name, p.HTTPGet.Port.Value, port)
		case p.HTTPGet.Scheme != "HTTPS":
			t.Errorf("%s: probe of %s by %q: serve answers HTTPS with --tls-cert", what, name, p.HTTPGet.Scheme)
		}
	}
	// /readyz waits up to 3 s for the upstream and for storage
	// (serve's probeTimeout): a probe that gives up first (Kubernetes'
	// default is 1 s) takes a slow but live server out of service.
	if p := c.ReadinessProbe; p != nil && p.TimeoutSeconds <= 3 {
		t.Errorf("%s: readiness probe timeoutSeconds %d: /readyz may take 3 s, want more", what, p.TimeoutSeconds)
	}
	if len(svc.Spec.Ports) != 1 || kubePort(svc.Spec.Ports[0].TargetPort, c) != port {
		t.Errorf("%s: Service ports %+v: want one, to serve's port %s", what, svc.Spec.Ports, port)
	}
}

// TestDeployComposeServe checks the serve service of docker-compose.yml: the
// image the icebloom service builds, a proxy in front of the REST catalog
// service with --sync-on-commit, listening on all of the container's
// addresses and published on the host's loopback only, with the S3
// gateway's settings that planning and syncs need.
func TestDeployComposeServe(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployRepoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	project, err := loadCompose(raw)
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	var built, serve, rest *composeService
	for _, svc := range project.Services {
		switch {
		case svc.Build != nil:
			built = svc
		case deployImageRepo(svc.Image) == "apache/iceberg-rest-fixture":
			rest = svc
		case slices.Contains(svc.Command, "serve"):
			serve = svc
		}
	}
	if built == nil || serve == nil || rest == nil {
		t.Fatalf("docker-compose.yml: want the icebloom service built from the Dockerfile, a serve service and the REST catalog")
	}
	what := "docker-compose.yml service " + serve.Name
	if serve.Image != built.Image {
		t.Errorf("%s: image %s, want %s, the one service %s builds", what, serve.Image, built.Image, built.Name)
	}
	sa := deployServeArgs(t, what, serve.Command)
	restPort := "8181" // the fixture's default
	if p := rest.Environment["REST_PORT"]; p != "" {
		restPort = p
	}
	if host, port := deployHostPort(t, what+" --upstream", sa.flags["--upstream"]); host != rest.Name || port != restPort {
		t.Errorf("%s: --upstream %s, want the REST catalog service at %s:%s", what, sa.flags["--upstream"], rest.Name, restPort)
	}
	if c, ok := serve.DependsOn[rest.Name]; !ok || c != "service_healthy" {
		t.Errorf("%s: want depends_on %s with condition service_healthy", what, rest.Name)
	}
	if _, ok := sa.flags["--sync-on-commit"]; !ok {
		t.Errorf("%s: no --sync-on-commit", what)
	}
	if sa.flags["--sync-token-file"] == "" && serve.Environment["ICEBLOOM_SYNC_TOKEN"] == "" {
		t.Errorf("%s: --sync-on-commit without a sync token (--sync-token-file or ICEBLOOM_SYNC_TOKEN)", what)
	}
	port := sa.port(t, what)

	// Published on the host's loopback, at the container's serve port.
	var ports struct {
		Services map[string]struct {
			Ports []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &ports); err != nil {
		t.Fatal(err)
	}
	published := ports.Services[serve.Name].Ports
	if len(published) != 1 || !strings.HasPrefix(published[0], "127.0.0.1:") || !strings.HasSuffix(published[0], ":"+port) {
		t.Errorf("%s: ports %q, want one 127.0.0.1:HOST:%s", what, published, port)
	}

	// Planning reads, and syncs write, the S3 gateway's files: the fixture
	// vends no storage settings, so the AWS SDK's environment gives them
	// (AWS_S3_ENDPOINT is iceberg-go's, with path-style addressing).
	for _, k := range []string{"AWS_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
		if serve.Environment[k] == "" {
			t.Errorf("%s: no environment %s", what, k)
		}
	}
	var gateway *composeService
	for _, svc := range project.Services {
		if deployImageRepo(svc.Image) == "versity/versitygw" && len(svc.Entrypoint) == 0 {
			gateway = svc
		}
	}
	if gateway == nil {
		t.Fatal("docker-compose.yml: no S3 gateway service (versity/versitygw)")
	}
	if host, _ := deployHostPort(t, what+" AWS_S3_ENDPOINT", serve.Environment["AWS_S3_ENDPOINT"]); host != gateway.Name {
		t.Errorf("%s: AWS_S3_ENDPOINT points at %s, want the S3 gateway service %s", what, host, gateway.Name)
	}
	if serve.Environment["AWS_ACCESS_KEY_ID"] != gateway.Environment["ROOT_ACCESS_KEY_ID"] ||
		serve.Environment["AWS_SECRET_ACCESS_KEY"] != gateway.Environment["ROOT_SECRET_ACCESS_KEY"] {
		t.Errorf("%s: S3 credentials are not the gateway's root keys", what)
	}
}

// deployMiB reads a size in MiB with the suffix mi (MiB) or gi (GiB): 0 for
// anything else.
func deployMiB(s, mi, gi string) int64 {
	for suffix, scale := range map[string]int64{mi: 1, gi: 1024} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			if v, err := strconv.ParseInt(n, 10, 64); err == nil {
				return v * scale
			}
		}
	}
	return 0
}
