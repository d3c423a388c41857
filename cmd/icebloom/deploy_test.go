package main

// Tests of the deployment files: docker-compose.yml, docs/kubernetes/cronjob.yaml,
// docs/kubernetes/indexed-job.yaml and the Dockerfile. Docker and Kubernetes are not needed: the files are
// parsed, the command lines they give icebloom are parsed by icebloom's own
// CLI parser, and the binary is built as the Dockerfile builds it and checked
// to be static.

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alexflint/go-arg"
	"gopkg.in/yaml.v3"
)

// deployRepoRoot returns the repository root: two levels up from this package.
func deployRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// deployParseArgs parses argv with icebloom's parser, configured as run
// configures it, without running the command.
func deployParseArgs(t *testing.T, what string, argv []string) *Args {
	t.Helper()
	var args Args
	p, err := arg.NewParser(arg.Config{Program: "icebloom", Exit: func(int) {}}, &args)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Parse(argv); err != nil {
		t.Fatalf("%s: icebloom %s: %v", what, strings.Join(argv, " "), err)
	}
	return &args
}

// deployProperties returns the --property values of args as a map.
func deployProperties(t *testing.T, what string, args *Args) map[string]string {
	t.Helper()
	props := map[string]string{}
	for _, kv := range args.Properties {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			t.Errorf("%s: --property %q: want key=value", what, kv)
			continue
		}
		props[k] = v
	}
	return props
}

// deployCheckImage reports whether ref names an image by a fixed tag: a tag
// that is not latest, and no registry host (images resolve against the
// registry the user's container engine is configured with).
func deployCheckImage(ref string) error {
	if ref == "" {
		return fmt.Errorf("no image")
	}
	name, _, _ := strings.Cut(ref, "@") // a digest may follow the tag
	slash := strings.LastIndex(name, "/")
	colon := strings.LastIndex(name, ":")
	if colon <= slash {
		return fmt.Errorf("image %q: not pinned by a tag", ref)
	}
	repo, tag := name[:colon], name[colon+1:]
	if tag == "" || strings.EqualFold(tag, "latest") {
		return fmt.Errorf("image %q: pin a release tag, not %q", ref, tag)
	}
	if first, _, more := strings.Cut(repo, "/"); more && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return fmt.Errorf("image %q: names registry host %q", ref, first)
	}
	return nil
}

// deployImageRepo returns the repository of an image reference: ref without its
// tag and digest.
func deployImageRepo(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
		name = name[:colon]
	}
	return name
}

// deployHostPort returns the host and port of a URL.
func deployHostPort(t *testing.T, what, rawURL string) (host, port string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		t.Fatalf("%s: %q is not a URL with a host (%v)", what, rawURL, err)
	}
	return u.Hostname(), u.Port()
}

// The compose file is read with yaml.v3 into the part of the Compose
// specification the deployment uses. (compose-go, the loader docker compose
// uses, needs modules go.mod does not list.) Its keys are checked against the
// specification's, so a misspelt key fails here as it would in docker
// compose, and the short and long forms of the attributes read are accepted.

// composeTopKeys are the top-level keys of the Compose specification.
var composeTopKeys = []string{"version", "name", "include", "services", "networks", "volumes", "configs", "secrets", "models"}

// composeServiceKeys are the service keys of the Compose specification.
var composeServiceKeys = []string{
	"annotations", "attach", "blkio_config", "build", "cap_add", "cap_drop", "cgroup", "cgroup_parent",
	"command", "configs", "container_name", "cpu_count", "cpu_percent", "cpu_period", "cpu_quota",
	"cpu_rt_period", "cpu_rt_runtime", "cpu_shares", "cpus", "cpuset", "credential_spec", "depends_on",
	"deploy", "develop", "device_cgroup_rules", "devices", "dns", "dns_opt", "dns_search", "domainname",
	"entrypoint", "env_file", "environment", "expose", "extends", "external_links", "extra_hosts",
	"gpus", "group_add", "healthcheck", "hostname", "image", "init", "ipc", "isolation", "labels",
	"label_file", "links", "logging", "mac_address", "mem_limit", "mem_reservation", "mem_swappiness",
	"memswap_limit", "models", "network_mode", "networks", "oom_kill_disable", "oom_score_adj", "pid",
	"pids_limit", "platform", "ports", "post_start", "pre_stop", "privileged", "profiles", "provider",
	"pull_policy", "read_only", "restart", "runtime", "scale", "secrets", "security_opt", "shm_size",
	"stdin_open", "stop_grace_period", "stop_signal", "storage_opt", "sysctls", "tmpfs", "tty",
	"ulimits", "use_api_socket", "user", "userns_mode", "uts", "volumes", "volumes_from", "working_dir",
}

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]*composeService `yaml:"services"`
	Volumes  map[string]any             `yaml:"volumes"`
}

type composeService struct {
	Name        string              `yaml:"-"`
	Image       string              `yaml:"image"`
	Build       *composeBuild       `yaml:"build"`
	Command     composeCommand      `yaml:"command"`
	Entrypoint  composeCommand      `yaml:"entrypoint"`
	Environment composeEnvironment  `yaml:"environment"`
	DependsOn   composeDependencies `yaml:"depends_on"`
	HealthCheck *struct {
		Test    composeCommand `yaml:"test"`
		Disable bool           `yaml:"disable"`
	} `yaml:"healthcheck"`
	Restart string   `yaml:"restart"`
	Volumes []string `yaml:"volumes"` // the short syntax
}

// composeBuild is build: a context path, or a mapping.
type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

func (b *composeBuild) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	type plain composeBuild
	return n.Decode((*plain)(b))
}

// composeCommand is a command: a list, or a string split into words.
type composeCommand []string

func (c *composeCommand) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if strings.ContainsAny(n.Value, `"'\`) {
			return fmt.Errorf("line %d: write command %q as a list: this test does not split quoted strings", n.Line, n.Value)
		}
		*c = strings.Fields(n.Value)
		return nil
	}
	return n.Decode((*[]string)(c))
}

// composeEnvironment is environment: a mapping, or a list of KEY=VALUE.
type composeEnvironment map[string]string

func (e *composeEnvironment) UnmarshalYAML(n *yaml.Node) error {
	*e = composeEnvironment{}
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
		return nil
	}
	var m map[string]yaml.Node
	if err := n.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: environment %s: not a scalar", v.Line, k)
		}
		switch v.Tag {
		case "!!null":
			// A variable without a value is taken from the environment
			// of docker compose.
			return fmt.Errorf("line %d: environment %s: no value", v.Line, k)
		case "!!bool":
			// The Compose specification asks for quotes: YAML readers do
			// not agree on the text of a boolean.
			return fmt.Errorf("line %d: environment %s: quote the value %s", v.Line, k, v.Value)
		}
		(*e)[k] = v.Value
	}
	return nil
}

// composeDependencies is depends_on: a list of services (condition
// service_started), or a mapping to their conditions.
type composeDependencies map[string]string

func (d *composeDependencies) UnmarshalYAML(n *yaml.Node) error {
	*d = composeDependencies{}
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, s := range list {
			(*d)[s] = "service_started"
		}
		return nil
	}
	var m map[string]struct {
		Condition string `yaml:"condition"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	for s, dep := range m {
		(*d)[s] = cmp.Or(dep.Condition, "service_started")
	}
	return nil
}

// loadCompose reads a compose file, checking its keys against the
// specification's.
func loadCompose(data []byte) (*composeFile, error) {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	for k := range top {
		if !slices.Contains(composeTopKeys, k) && !strings.HasPrefix(k, "x-") {
			return nil, fmt.Errorf("unknown top-level key %q", k)
		}
	}
	var keys struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return nil, err
	}
	for name, svc := range keys.Services {
		for k := range svc {
			if !slices.Contains(composeServiceKeys, k) && !strings.HasPrefix(k, "x-") {
				return nil, fmt.Errorf("service %s: unknown key %q", name, k)
			}
		}
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	for name, svc := range f.Services {
		if svc == nil {
			return nil, fmt.Errorf("service %s: empty", name)
		}
		svc.Name = name
	}
	return &f, nil
}

func TestDeployCompose(t *testing.T) {
	root := deployRepoRoot(t)
	path := filepath.Join(root, "docker-compose.yml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// What is checked here must be what runs, whatever the environment of
	// `docker compose up`: no ${VAR} in the file.
	if i := bytes.IndexByte(raw, '$'); i >= 0 {
		line := bytes.Count(raw[:i], []byte("\n")) + 1
		t.Fatalf("docker-compose.yml:%d: variable interpolation: the file is checked without an environment, so pin values in the file", line)
	}
	project, err := loadCompose(raw)
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}

	// The services by role, found by image so that renaming one keeps the
	// test meaningful.
	var icebloom, gateway, bucketJob, rest *composeService
	for _, name := range slices.Sorted(maps.Keys(project.Services)) {
		svc := project.Services[name]
		if svc.Build != nil {
			ctxDir := svc.Build.Context
			if !filepath.IsAbs(ctxDir) {
				ctxDir = filepath.Join(root, ctxDir)
			}
			if filepath.Clean(ctxDir) != root {
				t.Errorf("service %s: built from %s, want the repository root", name, svc.Build.Context)
			}
			if df := cmp.Or(svc.Build.Dockerfile, "Dockerfile"); df != "Dockerfile" {
				t.Errorf("service %s: built from %s, want the Dockerfile", name, df)
			}
			if svc.Image != "" {
				if err := deployCheckImage(svc.Image); err != nil {
					t.Errorf("service %s: %v", name, err)
				}
			}
			if icebloom != nil {
				t.Errorf("services %s and %s are both built from the Dockerfile", icebloom.Name, name)
			}
			icebloom = svc
			continue
		}
		if err := deployCheckImage(svc.Image); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
		switch deployImageRepo(svc.Image) {
		case "versity/versitygw": // the gateway, or the job making its bucket's directory
			if len(svc.Entrypoint) > 0 {
				bucketJob = svc
			} else {
				gateway = svc
			}
		case "apache/iceberg-rest-fixture":
			rest = svc
		}
	}
	for role, svc := range map[string]*composeService{
		"icebloom (built from the Dockerfile)": icebloom, "S3 gateway (versity/versitygw)": gateway,
		"bucket creation (versity/versitygw with an entrypoint)": bucketJob, "REST catalog (apache/iceberg-rest-fixture)": rest,
	} {
		if svc == nil {
			t.Fatalf("no %s service", role)
		}
	}
	if _, tag, _ := strings.Cut(gateway.Image, ":"); !strings.HasPrefix(tag, "v") || bucketJob.Image != gateway.Image {
		t.Errorf("S3 gateway images %s, %s: pin one release tag (vX.Y.Z) for both", gateway.Image, bucketJob.Image)
	}

	// Named volumes are declared; a dependency waiting for health needs a
	// health check to wait for.
	for _, name := range slices.Sorted(maps.Keys(project.Services)) {
		svc := project.Services[name]
		for _, v := range svc.Volumes {
			src, _, bind := strings.Cut(v, ":")
			named := bind && src != "" && !strings.ContainsAny(src[:1], "./~$")
			if _, declared := project.Volumes[src]; named && !declared {
				t.Errorf("service %s: volume %s is not declared under volumes", name, src)
			}
		}
		for dep, condition := range svc.DependsOn {
			target, ok := project.Services[dep]
			switch {
			case !ok:
				t.Errorf("service %s depends on unknown service %s", name, dep)
			case !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, condition):
				t.Errorf("service %s: depends_on %s: unknown condition %q", name, dep, condition)
			case condition == "service_healthy" && (target.HealthCheck == nil || target.HealthCheck.Disable || len(target.HealthCheck.Test) == 0):
				t.Errorf("service %s waits for %s to be healthy, but %s has no health check", name, dep, dep)
			}
		}
		if hc := svc.HealthCheck; hc != nil && len(hc.Test) > 0 && !slices.Contains([]string{"CMD", "CMD-SHELL", "NONE"}, hc.Test[0]) {
			t.Errorf("service %s: healthcheck test %q: want CMD, CMD-SHELL or NONE first", name, hc.Test)
		}
	}
	wantDependency := func(from, to *composeService, condition string) {
		t.Helper()
		if c, ok := from.DependsOn[to.Name]; !ok || c != condition {
			t.Errorf("service %s: want depends_on %s with condition %s, have %v", from.Name, to.Name, condition, from.DependsOn)
		}
	}
	wantDependency(gateway, bucketJob, "service_completed_successfully")
	wantDependency(rest, gateway, "service_healthy")
	wantDependency(icebloom, rest, "service_healthy")
	if bucketJob.Restart != "" && bucketJob.Restart != "no" {
		t.Errorf("service %s is one-shot: restart %q", bucketJob.Name, bucketJob.Restart)
	}

	// icebloom's command line, parsed by its own parser.
	if len(icebloom.Entrypoint) > 0 {
		t.Errorf("service %s overrides the image's entrypoint: %q", icebloom.Name, icebloom.Entrypoint)
	}
	what := "docker-compose.yml service " + icebloom.Name
	args := deployParseArgs(t, what, icebloom.Command)
	if args.Maintain == nil {
		t.Fatalf("%s: command %q is not maintain", what, icebloom.Command)
	}
	if args.Maintain.Every == nil || args.Maintain.Every.d < time.Minute {
		t.Errorf("%s: maintain needs --every of a minute or more to keep running, have %q", what, icebloom.Command)
	} else {
		t.Logf("%s: maintain --every %s", what, args.Maintain.Every.d)
	}
	if args.Type != "rest" {
		t.Errorf("%s: --catalog %q, want rest", what, args.Type)
	}
	restPort := cmp.Or(rest.Environment["REST_PORT"], "8181") // the fixture's default
	if host, port := deployHostPort(t, what+" --uri", args.URI); host != rest.Name || port != restPort {
		t.Errorf("%s: --uri %s, want the REST catalog service at %s:%s", what, args.URI, rest.Name, restPort)
	}

	// The gateway: `versitygw [flags] posix DIR`, listening on --port.
	if len(gateway.Entrypoint) > 0 {
		t.Errorf("service %s overrides the image's entrypoint: %q", gateway.Name, gateway.Entrypoint)
	}
	gwCmd := gateway.Command
	if len(gwCmd) < 2 || gwCmd[len(gwCmd)-2] != "posix" || !strings.HasPrefix(gwCmd[len(gwCmd)-1], "/") {
		t.Fatalf("service %s: command %q: want versitygw's [flags] posix DIR", gateway.Name, gwCmd)
	}
	gwDir := gwCmd[len(gwCmd)-1]
	gwPort := "7070" // versitygw's default
	for i, a := range gwCmd[:len(gwCmd)-2] {
		if (a == "--port" || a == "-p") && i+1 < len(gwCmd) {
			_, gwPort, _ = strings.Cut(gwCmd[i+1], ":")
		}
	}

	// Storage: the gateway's endpoint, credentials and path-style addressing.
	props := deployProperties(t, what, args)
	endpoint := props["s3.endpoint"]
	if endpoint == "" {
		t.Fatalf("%s: no --property s3.endpoint=...", what)
	}
	if host, port := deployHostPort(t, what+" s3.endpoint", endpoint); host != gateway.Name || port != gwPort {
		t.Errorf("%s: s3.endpoint %s, want the S3 gateway service at %s:%s", what, endpoint, gateway.Name, gwPort)
	}
	if props["s3.region"] == "" {
		t.Errorf("%s: no --property s3.region=...", what)
	}
	if v, ok := props["s3.force-virtual-addressing"]; ok {
		if b, err := strconv.ParseBool(v); err != nil || b {
			t.Errorf("%s: s3.force-virtual-addressing=%s: the gateway needs path-style addressing", what, v)
		}
	}
	user, password := gateway.Environment["ROOT_ACCESS_KEY_ID"], gateway.Environment["ROOT_SECRET_ACCESS_KEY"]
	if user == "" || password == "" {
		t.Errorf("service %s: the gateway needs its root user's ROOT_ACCESS_KEY_ID and ROOT_SECRET_ACCESS_KEY", gateway.Name)
	}
	keyID := cmp.Or(props["s3.access-key-id"], icebloom.Environment["AWS_ACCESS_KEY_ID"])
	secret := cmp.Or(props["s3.secret-access-key"], icebloom.Environment["AWS_SECRET_ACCESS_KEY"])
	if keyID != user || secret != password {
		t.Errorf("%s: S3 credentials %q/%q are not the gateway's %q/%q", what, keyID, secret, user, password)
	}

	// One warehouse: the bucket created, the catalog's warehouse, icebloom's.
	// The bucket job runs `mkdir -p DIR/BUCKET` on the volume the gateway
	// serves at DIR: its posix backend takes each top directory for a bucket.
	var bucket string
	if ep := bucketJob.Entrypoint; len(ep) == 3 && ep[0] == "mkdir" && ep[1] == "-p" && len(bucketJob.Command) == 0 {
		if b, ok := strings.CutPrefix(ep[2], gwDir+"/"); ok && b != "" && !strings.Contains(b, "/") {
			bucket = b
		}
	}
	if bucket == "" {
		t.Fatalf("service %s: entrypoint %q, command %q: want mkdir -p %s/BUCKET", bucketJob.Name, bucketJob.Entrypoint, bucketJob.Command, gwDir)
	}
	mountOf := func(svc *composeService) string {
		for _, v := range svc.Volumes {
			if src, dst, ok := strings.Cut(v, ":"); ok && strings.TrimSuffix(dst, ":rw") == gwDir {
				return src
			}
		}
		return ""
	}
	if vol := mountOf(gateway); vol == "" || mountOf(bucketJob) != vol {
		t.Errorf("services %s and %s: want one volume mounted at %s in both, have %q and %q", gateway.Name, bucketJob.Name, gwDir, gateway.Volumes, bucketJob.Volumes)
	}
	warehouse := rest.Environment["CATALOG_WAREHOUSE"]
	if u, err := url.Parse(warehouse); err != nil || u.Scheme != "s3" || u.Host != bucket {
		t.Errorf("service %s: CATALOG_WAREHOUSE %q, want s3://%s/...", rest.Name, warehouse, bucket)
	}
	if args.Warehouse != "" && args.Warehouse != warehouse {
		t.Errorf("%s: --warehouse %s, but the catalog's is %s", what, args.Warehouse, warehouse)
	}
	if v := rest.Environment["CATALOG_IO__IMPL"]; v != "org.apache.iceberg.aws.s3.S3FileIO" {
		t.Errorf("service %s: CATALOG_IO__IMPL %q, want S3FileIO", rest.Name, v)
	}
	if host, _ := deployHostPort(t, rest.Name+" CATALOG_S3_ENDPOINT", rest.Environment["CATALOG_S3_ENDPOINT"]); host != gateway.Name {
		t.Errorf("service %s: CATALOG_S3_ENDPOINT points at %s, want %s", rest.Name, host, gateway.Name)
	}
	if v := rest.Environment["CATALOG_S3_PATH__STYLE__ACCESS"]; v != "true" {
		t.Errorf("service %s: CATALOG_S3_PATH__STYLE__ACCESS %q, want true (the gateway is path-style)", rest.Name, v)
	}
	if rest.Environment["CATALOG_S3_ACCESS__KEY__ID"] != user || rest.Environment["CATALOG_S3_SECRET__ACCESS__KEY"] != password {
		t.Errorf("service %s: S3 credentials are not the gateway's", rest.Name)
	}
	if rest.Environment["AWS_REGION"] == "" {
		t.Errorf("service %s: no AWS_REGION (the AWS SDK of S3FileIO needs one)", rest.Name)
	}
}

// kubeCronJob is the part of a Kubernetes CronJob the test reads.
type kubeCronJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		Schedule          string `yaml:"schedule"`
		TimeZone          string `yaml:"timeZone"`
		ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
		JobTemplate       struct {
			Spec struct {
				Template struct {
					Spec kubePodSpec `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

// kubePodSpec is the part of a pod template's spec the tests read.
type kubePodSpec struct {
	RestartPolicy   string              `yaml:"restartPolicy"`
	SecurityContext kubeSecurityContext `yaml:"securityContext"`
	Containers      []kubeContainer     `yaml:"containers"`
	Volumes         []kubeVolume        `yaml:"volumes"`
}

type kubeSecurityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type kubeContainer struct {
	Name      string       `yaml:"name"`
	Image     string       `yaml:"image"`
	Command   []string     `yaml:"command"`
	Args      []string     `yaml:"args"`
	Env       []kubeEnvVar `yaml:"env"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext kubeSecurityContext `yaml:"securityContext"`
	VolumeMounts    []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// kubeEnvVar is an env var of a container: a value, or where Kubernetes
// takes it from.
type kubeEnvVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name     string `yaml:"name"`
			Key      string `yaml:"key"`
			Optional bool   `yaml:"optional"`
		} `yaml:"secretKeyRef"`
		// FieldRef is the downward API: a field of the pod.
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

// kubeVar is a $(VAR) reference Kubernetes expands in a container's args.
var kubeVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// deployLoadKube reads the one Kubernetes object of the manifest at path
// into v.
func deployLoadKube(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var more any
	if err := dec.Decode(&more); err == nil {
		t.Fatalf("%s: more than one document", path)
	}
}

// deployCheckKubePod checks the pod template of a Job (or of a CronJob's
// jobs) that runs icebloom, and returns its container and icebloom's parsed
// command line: one container; its image pinned; non-root, a read-only root
// file system, no privilege escalation and no capabilities; CPU and memory
// requests and a memory limit; credentials from a Secret, never literal; the
// args icebloom's parser accepts once Kubernetes has expanded their $(VAR)
// references, each to an env var of the container; and a catalog configured
// (not the embedded one in the pod's ephemeral storage). env, when set, is
// what Kubernetes gives the env vars whose values it fills in (the
// downward API, Secrets) while the args are parsed, as the container would
// see them; so is every literal value.
func deployCheckKubePod(t *testing.T, what string, pod kubePodSpec, env map[string]string) (kubeContainer, *Args) {
	t.Helper()
	if pod.RestartPolicy != "Never" && pod.RestartPolicy != "OnFailure" {
		t.Errorf("%s: restartPolicy %q: a Job's pods need Never or OnFailure", what, pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want icebloom alone", what, len(pod.Containers))
	}
	c := pod.Containers[0]
	if err := deployCheckImage(c.Image); err != nil {
		t.Errorf("container %s: %v", c.Name, err)
	}

	// Non-root, read-only, no capabilities.
	nonRoot := pod.SecurityContext.RunAsNonRoot
	if c.SecurityContext.RunAsNonRoot != nil {
		nonRoot = c.SecurityContext.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		t.Errorf("container %s: runAsNonRoot is not true", c.Name)
	}
	for _, u := range []*int64{pod.SecurityContext.RunAsUser, c.SecurityContext.RunAsUser} {
		if u != nil && *u == 0 {
			t.Errorf("container %s: runAsUser 0", c.Name)
		}
	}
	sc := c.SecurityContext
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: readOnlyRootFilesystem is not true", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container %s: capabilities drop %q, want ALL", c.Name, sc.Capabilities.Drop)
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("container %s: no %s request", c.Name, r)
		}
	}
	if c.Resources.Limits["memory"] == "" {
		t.Errorf("container %s: no memory limit", c.Name)
	}

	// Credentials come from a Secret, never a literal value: in a variable,
	// or (better: in neither the process list nor the environment) in a
	// file of a Secret mounted read-only, which a *_FILE variable names.
	secretDirs := map[string]bool{}
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				if !m.ReadOnly {
					t.Errorf("container %s: Secret volume %s mounted writable", c.Name, m.Name)
				}
				secretDirs[strings.TrimSuffix(m.MountPath, "/")] = true
			}
		}
	}
	defined := map[string]bool{}
	fromSecret := 0
	for _, e := range c.Env {
		defined[e.Name] = true
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret++
			continue
		}
		if strings.HasSuffix(e.Name, "_FILE") && e.Value != nil {
			if !secretDirs[filepath.Dir(*e.Value)] {
				t.Errorf("container %s: env %s=%s is no file of a mounted Secret", c.Name, e.Name, *e.Value)
			}
			fromSecret++
			continue
		}
		upper := strings.ToUpper(e.Name)
		for _, s := range []string{"SECRET", "PASSWORD", "TOKEN", "CREDENTIAL", "ACCESS_KEY"} {
			if strings.Contains(upper, s) && e.Value != nil {
				t.Errorf("container %s: env %s is a literal value; take it from a Secret", c.Name, e.Name)
			}
		}
	}
	if fromSecret == 0 {
		t.Errorf("container %s: no env from a Secret", c.Name)
	}

	// The image's entrypoint is icebloom; the args are its command line once
	// Kubernetes has expanded $(VAR) references, each of which must be an
	// env var of the container (else it is passed on literally).
	if len(c.Command) > 0 && filepath.Base(c.Command[0]) != "icebloom" {
		t.Errorf("container %s: command %q does not run icebloom", c.Name, c.Command)
	}
	argv := make([]string, len(c.Args))
	for i, a := range c.Args {
		argv[i] = kubeVar.ReplaceAllStringFunc(a, func(ref string) string {
			name := kubeVar.FindStringSubmatch(ref)[1]
			if !defined[name] {
				t.Errorf("container %s: arg %q refers to $(%s), which is not in its env", c.Name, a, name)
			}
			return "value-of-" + name
		})
		if strings.ContainsAny(a, "\n") {
			t.Errorf("container %s: arg %q spans lines", c.Name, a)
		}
		for _, p := range []string{"s3.secret-access-key=", "s3.session-token=", "--token=", "--credential="} {
			if strings.Contains(a, p) && !kubeVar.MatchString(a) {
				t.Errorf("container %s: arg %q holds a secret; take it from a Secret", c.Name, a)
			}
		}
	}
	if env != nil {
		// Flags icebloom takes from the environment see the container's.
		for _, e := range c.Env {
			switch {
			case e.Value != nil:
				t.Setenv(e.Name, *e.Value)
			case env[e.Name] != "":
				t.Setenv(e.Name, env[e.Name])
			default:
				t.Setenv(e.Name, "value-of-"+e.Name)
			}
		}
	}
	what += " container " + c.Name
	args := deployParseArgs(t, what, argv)
	if args.Type == "" && args.URI == "" && args.ConfigPath == "" {
		t.Errorf("%s: no catalog configured: it would work on an embedded catalog in the pod's ephemeral storage", what)
	}
	deployProperties(t, what, args)
	return c, args
}

func TestDeployKubernetesCronJob(t *testing.T) {
	path := filepath.Join(deployRepoRoot(t), "docs", "kubernetes", "cronjob.yaml")
	var job kubeCronJob
	deployLoadKube(t, path, &job)
	if job.APIVersion != "batch/v1" || job.Kind != "CronJob" {
		t.Fatalf("%s: %s %s, want batch/v1 CronJob", path, job.APIVersion, job.Kind)
	}
	if err := checkCronSchedule(job.Spec.Schedule); err != nil {
		t.Errorf("schedule %q: %v", job.Spec.Schedule, err)
	}
	if tz := job.Spec.TimeZone; tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			t.Errorf("timeZone %q: %v", tz, err)
		}
	}
	if job.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("concurrencyPolicy %q: want Forbid, so that runs never overlap", job.Spec.ConcurrencyPolicy)
	}
	what := "cronjob.yaml"
	c, args := deployCheckKubePod(t, what, job.Spec.JobTemplate.Spec.Template.Spec, nil)
	if args.Maintain == nil {
		t.Fatalf("%s: args %q are not maintain", what, c.Args)
	}
	if args.Maintain.Every != nil {
		t.Errorf("%s: maintain --every keeps running; a CronJob runs it once per schedule", what)
	}
}

// kubeJob is the part of a Kubernetes Job the test reads.
type kubeJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimit         *int   `yaml:"backoffLimit"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		PodFailurePolicy     *struct {
			Rules []struct {
				Action string `yaml:"action"`
			} `yaml:"rules"`
		} `yaml:"podFailurePolicy"`
		Template struct {
			Spec kubePodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// jobUIDField is the downward API's field of the UID of the Job a pod
// belongs to: the label the Job controller sets on its pods (Kubernetes
// 1.27 and later). A run id from it is the same in every pod and retry of
// the Job, and new for every Job object, so a Job applied again after a
// complete one is a new run rather than a refused one.
const jobUIDField = "metadata.labels['batch.kubernetes.io/controller-uid']"

// sampleJobUID is a Job UID as the downward API gives it.
const sampleJobUID = "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"

// dnsLabel is a DNS label as RFC 1123 defines it, what a Job's name must be
// for it to be the value of its pods' job-name label.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// indexedJobProblems returns what is wrong with job as a sharded build: one
// `icebloom build` shard per completion index. The pods must be an Indexed
// Job's, whose completions are the shard count that the command gets from
// --shards or ICEBLOOM_SHARDS, and take their shard index from
// JOB_COMPLETION_INDEX, which Kubernetes sets in each pod (so neither
// --shard I/N nor a value of their own); their run id comes from the Job's
// UID through the downward API (ICEBLOOM_RUN_ID, or --run-id $(VAR) of a
// variable that does); a failed pod is retried within a backoff limit; and
// the merge threshold, if given, is the one the CronJob's maintain uses.
// Only the first container is read: deployCheckKubePod requires one.
func indexedJobProblems(job *kubeJob) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	spec := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		bad("%s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	if !dnsLabel.MatchString(job.Metadata.Name) {
		bad("name %q: want a DNS label of at most 63 characters, the value of its pods' job-name label", job.Metadata.Name)
	}
	if spec.CompletionMode != "Indexed" {
		bad("completionMode %q, want Indexed: the pods take their shard from JOB_COMPLETION_INDEX", spec.CompletionMode)
	}
	completions := 0
	if spec.Completions == nil || *spec.Completions < 2 {
		bad("completions %v: want the shard count, 2 or more", spec.Completions)
	} else {
		completions = *spec.Completions
	}
	if p := spec.Parallelism; p != nil && (*p < 1 || (completions > 0 && *p > completions)) {
		bad("parallelism %d: want 1 to completions (%d)", *p, completions)
	}
	if spec.BackoffLimit == nil && spec.BackoffLimitPerIndex == nil {
		bad("no backoffLimit or backoffLimitPerIndex: a failed shard is retried up to Kubernetes' default of 6 times")
	}
	for _, l := range []*int{spec.BackoffLimit, spec.BackoffLimitPerIndex} {
		if l != nil && *l < 0 {
			bad("backoff limit %d: want 0 or more", *l)
		}
	}
	pod := spec.Template.Spec
	if (spec.BackoffLimitPerIndex != nil || spec.PodFailurePolicy != nil) && pod.RestartPolicy != "Never" {
		bad("restartPolicy %q: backoffLimitPerIndex and podFailurePolicy need Never", pod.RestartPolicy)
	}
	if len(pod.Containers) == 0 {
		return append(problems, "no container")
	}
	c := pod.Containers[0]

	// The shard count: --shards N (or --shards=N) and ICEBLOOM_SHARDS, each
	// equal to completions; at least one of them.
	var counts []string
	runIDArg := "" // the value of --run-id
	for i, a := range c.Args {
		next := ""
		if i+1 < len(c.Args) {
			next = c.Args[i+1]
		}
		switch {
		case a == "--shards":
			counts = append(counts, "--shards "+next)
		case strings.HasPrefix(a, "--shards="):
			counts = append(counts, "--shards "+strings.TrimPrefix(a, "--shards="))
		case a == "--shard" || strings.HasPrefix(a, "--shard="):
			bad("arg %q: an explicit shard index makes every pod the same shard; --shards takes it from JOB_COMPLETION_INDEX", a)
		case a == "--run-id":
			runIDArg = next
		case strings.HasPrefix(a, "--run-id="):
			runIDArg = strings.TrimPrefix(a, "--run-id=")
		}
	}
	runID := ""
	for _, e := range c.Env {
		switch e.Name {
		case "ICEBLOOM_SHARDS":
			if e.Value == nil {
				bad("env ICEBLOOM_SHARDS: want the shard count as a value")
			} else {
				counts = append(counts, "ICEBLOOM_SHARDS "+*e.Value)
			}
		case "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX":
			bad("env %s: Kubernetes sets the completion index of each pod; a value here overrides it", e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == jobUIDField {
			if (e.Name == "ICEBLOOM_RUN_ID" && runIDArg == "") || runIDArg == "$("+e.Name+")" {
				runID = e.Name
			}
		}
	}
	if len(counts) == 0 {
		bad("no shard count: want --shards N or env ICEBLOOM_SHARDS equal to completions")
	}
	for _, cnt := range counts {
		_, v, _ := strings.Cut(cnt, " ")
		if n, err := strconv.Atoi(v); err != nil || n != completions {
			bad("%s: want completions, %d", cnt, completions)
		}
	}
	if runID == "" {
		bad("no run id from the Job's UID: want env ICEBLOOM_RUN_ID, or --run-id $(VAR), from the downward API's %s", jobUIDField)
	}
	return problems
}

// TestDeployKubernetesIndexedJob checks docs/kubernetes/indexed-job.yaml: a
// Job whose pods are the shards of one build (indexedJobProblems), each pod
// as safe as the CronJob's (deployCheckKubePod) and running `icebloom
// build` on a table.
func TestDeployKubernetesIndexedJob(t *testing.T) {
	path := filepath.Join(deployRepoRoot(t), "docs", "kubernetes", "indexed-job.yaml")
	var job kubeJob
	deployLoadKube(t, path, &job)
	for _, p := range indexedJobProblems(&job) {
		t.Errorf("%s: %s", path, p)
	}
	what := "indexed-job.yaml"
	// The run id is the Job's name, as the downward API gives it.
	c, args := deployCheckKubePod(t, what, job.Spec.Template.Spec, map[string]string{"ICEBLOOM_RUN_ID": sampleJobUID})
	if args.Build == nil {
		t.Fatalf("%s: args %q are not build: the shards of a run are builds", what, c.Args)
	}
	if args.Build.Table == "" {
		t.Errorf("%s: build %q names no table", what, c.Args)
	}
	// What icebloom's parser made of the shard count and the run id, from
	// the args or the env (when this icebloom has the flags).
	if v, ok := deployFlagValue(args.Build, "--shards"); !ok {
		t.Logf("%s: this icebloom has no --shards flag; the shard count is checked in the manifest only", what)
	} else if n := *job.Spec.Completions; v.Kind() != reflect.Int || v.Int() != int64(n) {
		t.Errorf("%s: icebloom reads --shards %v, want completions, %d", what, v, n)
	}
	if v, ok := deployFlagValue(args.Build, "--run-id"); ok && (v.Kind() != reflect.String || v.String() != sampleJobUID) {
		t.Errorf("%s: icebloom reads --run-id %q, want the Job's UID %q", what, v, sampleJobUID)
	}
}

// deployFlagValue returns the field of the parsed command cmd (a pointer to
// a go-arg struct) that the flag sets, looking into embedded structs, and
// whether there is one.
func deployFlagValue(cmd any, flag string) (reflect.Value, bool) {
	var find func(v reflect.Value) (reflect.Value, bool)
	find = func(v reflect.Value) (reflect.Value, bool) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if fv, ok := find(v.Field(i)); ok {
					return fv, true
				}
				continue
			}
			for part := range strings.SplitSeq(f.Tag.Get("arg"), ",") {
				if part == flag {
					return v.Field(i), true
				}
			}
		}
		return reflect.Value{}, false
	}
	return find(reflect.ValueOf(cmd).Elem())
}

// TestDeployIndexedJobProblems checks indexedJobProblems on the manifest
// changed in the ways a sharded build goes wrong: each change is found, and
// the other spellings the command takes pass.
func TestDeployIndexedJobProblems(t *testing.T) {
	path := filepath.Join(deployRepoRoot(t), "docs", "kubernetes", "indexed-job.yaml")
	env := func(job *kubeJob, name string) int {
		i := slices.IndexFunc(job.Spec.Template.Spec.Containers[0].Env, func(e kubeEnvVar) bool { return e.Name == name })
		if i < 0 {
			t.Fatalf("the manifest has no env %s", name)
		}
		return i
	}
	container := func(job *kubeJob) *kubeContainer { return &job.Spec.Template.Spec.Containers[0] }
	withoutShardsEnv := func(job *kubeJob) {
		c := container(job)
		c.Env = slices.Delete(c.Env, env(job, "ICEBLOOM_SHARDS"), env(job, "ICEBLOOM_SHARDS")+1)
	}
	for _, tc := range []struct {
		name   string
		change func(job *kubeJob)
		want   string // a problem holds it; "" for none
	}{
		{"as written", func(*kubeJob) {}, ""},
		{"fewer completions than shards", func(job *kubeJob) { *job.Spec.Completions = 4 }, "ICEBLOOM_SHARDS 8: want completions, 4"},
		{"not indexed", func(job *kubeJob) { job.Spec.CompletionMode = "NonIndexed" }, `completionMode "NonIndexed"`},
		{"one completion", func(job *kubeJob) { *job.Spec.Completions = 1 }, "want the shard count, 2 or more"},
		{"an explicit shard", func(job *kubeJob) {
			container(job).Args = append(container(job).Args, "--shard=0/8")
		}, `arg "--shard=0/8": an explicit shard index`},
		{"no shard count", withoutShardsEnv, "no shard count"},
		{"--shards=8 instead of the env", func(job *kubeJob) {
			withoutShardsEnv(job)
			container(job).Args = append(container(job).Args, "--shards=8")
		}, ""},
		{"--shards 6", func(job *kubeJob) {
			container(job).Args = append(container(job).Args, "--shards", "6")
		}, "--shards 6: want completions, 8"},
		{"a shard count not a number", func(job *kubeJob) {
			*container(job).Env[env(job, "ICEBLOOM_SHARDS")].Value = "eight"
		}, "ICEBLOOM_SHARDS eight: want completions, 8"},
		{"the run id from the pod's name", func(job *kubeJob) {
			container(job).Env[env(job, "ICEBLOOM_RUN_ID")].ValueFrom.FieldRef.FieldPath = "metadata.name"
		}, "no run id from the Job's UID"},
		{"the run id from the Job's name", func(job *kubeJob) {
			container(job).Env[env(job, "ICEBLOOM_RUN_ID")].ValueFrom.FieldRef.FieldPath = "metadata.labels['batch.kubernetes.io/job-name']"
		}, "no run id from the Job's UID"},
		{"--run-id from another variable", func(job *kubeJob) {
			container(job).Env[env(job, "ICEBLOOM_RUN_ID")].Name = "JOB_NAME"
			container(job).Args = append(container(job).Args, "--run-id=$(JOB_NAME)")
		}, ""},
		{"--run-id overriding the env", func(job *kubeJob) {
			container(job).Args = append(container(job).Args, "--run-id", "first")
		}, "no run id from the Job's UID"},
		{"a completion index of its own", func(job *kubeJob) {
			c := container(job)
			e := c.Env[env(job, "HOME")]
			e.Name, e.Value = "JOB_COMPLETION_INDEX", new("0")
			c.Env = append(c.Env, e)
		}, "env JOB_COMPLETION_INDEX: Kubernetes sets"},
		{"no backoff limit", func(job *kubeJob) { job.Spec.BackoffLimitPerIndex, job.Spec.BackoffLimit = nil, nil }, "no backoffLimit"},
		{"backoffLimit alone", func(job *kubeJob) {
			job.Spec.BackoffLimitPerIndex, job.Spec.PodFailurePolicy, job.Spec.BackoffLimit = nil, nil, new(3)
		}, ""},
		{"per-index backoff restarting in place", func(job *kubeJob) { job.Spec.Template.Spec.RestartPolicy = "OnFailure" }, "need Never"},
		{"parallelism over completions", func(job *kubeJob) { *job.Spec.Parallelism = 9 }, "parallelism 9"},
		{"a name too long for a label", func(job *kubeJob) { job.Metadata.Name = strings.Repeat("icebloom-", 8) + "x" }, "want a DNS label"},
		{"a CronJob", func(job *kubeJob) { job.Kind = "CronJob" }, "want batch/v1 Job"},
	} {
		var job kubeJob
		deployLoadKube(t, path, &job)
		tc.change(&job)
		problems := indexedJobProblems(&job)
		switch found := slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }); {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: problems %q, want none", tc.name, problems)
		case tc.want != "" && !found:
			t.Errorf("%s: problems %q, want one holding %q", tc.name, problems, tc.want)
		}
	}
}

// cronFields are the fields of a standard cron schedule: name, range, and
// the names allowed for values.
var cronFields = []struct {
	name     string
	min, max int
	names    []string
}{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day of week", 0, 6, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// checkCronSchedule checks a five-field cron schedule as Kubernetes reads
// it (with robfig/cron's standard parser, whose day of week is 0-6): each
// field a list of *, values and ranges, with optional steps; ? for * in the
// day fields. Macros such as @hourly are refused: the file keeps the fields.
func checkCronSchedule(s string) error {
	fields := strings.Fields(s)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("%d fields, want 5 (minute hour day-of-month month day-of-week)", len(fields))
	}
	for i, f := range fields {
		spec := cronFields[i]
		value := func(v string) (int, error) {
			if j := slices.Index(spec.names, strings.ToUpper(v)); j >= 0 {
				return spec.min + j, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < spec.min || n > spec.max {
				return 0, fmt.Errorf("%s %q: want %d-%d", spec.name, v, spec.min, spec.max)
			}
			return n, nil
		}
		for item := range strings.SplitSeq(f, ",") {
			rng, step, hasStep := strings.Cut(item, "/")
			if hasStep {
				if n, err := strconv.Atoi(step); err != nil || n < 1 {
					return fmt.Errorf("%s %q: bad step", spec.name, item)
				}
			}
			if rng == "*" || (rng == "?" && (i == 2 || i == 4)) {
				continue
			}
			lo, hi, isRange := strings.Cut(rng, "-")
			a, err := value(lo)
			if err != nil {
				return err
			}
			if isRange {
				b, err := value(hi)
				if err != nil {
					return err
				}
				if b < a {
					return fmt.Errorf("%s %q: empty range", spec.name, item)
				}
			}
		}
	}
	return nil
}

// dockerInstruction is one instruction of a Dockerfile: its keyword,
// upper-cased, and its arguments, continuation lines joined.
type dockerInstruction struct {
	line    int
	keyword string
	args    string
}

// parseDockerfile splits a Dockerfile into instructions: comment lines
// dropped (also inside continued instructions), lines ending in a backslash
// joined to the next.
func parseDockerfile(data []byte) []dockerInstruction {
	var out []dockerInstruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		continued := strings.HasSuffix(line, `\`)
		cur.WriteString(strings.TrimSuffix(line, `\`))
		if continued {
			cur.WriteByte(' ')
			continue
		}
		keyword, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstruction{line: start, keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// deployGoVersion returns the Go version go.mod builds with: its toolchain line,
// else its go line.
func deployGoVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine, toolchain string
	for line := range strings.Lines(string(data)) {
		switch f := strings.Fields(line); {
		case len(f) == 2 && f[0] == "go":
			goLine = f[1]
		case len(f) == 2 && f[0] == "toolchain":
			toolchain = strings.TrimPrefix(f[1], "go")
		}
	}
	if v := cmp.Or(toolchain, goLine); v != "" {
		return v
	}
	t.Fatal("go.mod: no go line")
	return ""
}

func TestDeployDockerfile(t *testing.T) {
	root := deployRepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	instructions := parseDockerfile(data)
	goVer := deployGoVersion(t, root)

	type stage struct {
		image, name string
		instr       []dockerInstruction
	}
	var stages []*stage
	sawGolang := false
	for _, in := range instructions {
		if in.keyword != "FROM" {
			if len(stages) == 0 {
				if in.keyword != "ARG" {
					t.Errorf("Dockerfile:%d: %s before the first FROM", in.line, in.keyword)
				}
				continue
			}
			st := stages[len(stages)-1]
			st.instr = append(st.instr, in)
			continue
		}
		var f []string
		for _, w := range strings.Fields(in.args) {
			if !strings.HasPrefix(w, "--") { // --platform=...
				f = append(f, w)
			}
		}
		st := &stage{}
		switch {
		case len(f) == 1:
			st.image = f[0]
		case len(f) == 3 && strings.EqualFold(f[1], "AS"):
			st.image, st.name = f[0], f[2]
		default:
			t.Fatalf("Dockerfile:%d: FROM %s: want FROM IMAGE [AS NAME]", in.line, in.args)
		}
		earlier := slices.ContainsFunc(stages, func(s *stage) bool { return s.name != "" && s.name == st.image })
		switch {
		case st.image == "scratch" || earlier:
		case strings.Contains(st.image, "$"):
			t.Errorf("Dockerfile:%d: FROM %s: the image is a build argument, so not pinned", in.line, st.image)
		default:
			if err := deployCheckImage(st.image); err != nil {
				t.Errorf("Dockerfile:%d: %v", in.line, err)
			}
			if deployImageRepo(st.image) == "golang" {
				sawGolang = true
				tag := st.image[strings.LastIndex(st.image, ":")+1:]
				if tag != goVer && !strings.HasPrefix(tag, goVer+"-") {
					t.Errorf("Dockerfile:%d: FROM %s: go.mod builds with Go %s", in.line, st.image, goVer)
				}
			}
		}
		stages = append(stages, st)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a runtime stage", len(stages))
	}
	if !sawGolang {
		t.Errorf("Dockerfile: no build stage on the golang image")
	}

	// The build: static, trimmed, of ./cmd/icebloom.
	var built bool
	for _, st := range stages[:len(stages)-1] {
		cgoOff := false
		for _, in := range st.instr {
			if (in.keyword == "ENV" || in.keyword == "RUN") && strings.Contains(in.args, "CGO_ENABLED=0") {
				cgoOff = true
			}
			if in.keyword == "RUN" && strings.Contains(in.args, "go build") {
				for _, want := range []string{"-trimpath", `-ldflags "-s -w"`, "./cmd/icebloom"} {
					if !strings.Contains(in.args, want) {
						t.Errorf("Dockerfile:%d: go build without %s", in.line, want)
					}
				}
				if !cgoOff {
					t.Errorf("Dockerfile:%d: go build without CGO_ENABLED=0 (a static binary for scratch)", in.line)
				}
				built = true
			}
		}
	}
	if !built {
		t.Errorf("Dockerfile: no go build in a build stage")
	}

	// The runtime stage: scratch, CA certificates, HOME, a numeric non-root
	// user, the binary as entrypoint.
	final := stages[len(stages)-1]
	if final.image != "scratch" {
		t.Errorf("Dockerfile: the runtime stage is FROM %s, want scratch", final.image)
	}
	var user, entrypoint string
	var copied, home bool
	for _, in := range final.instr {
		switch in.keyword {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "COPY":
			copied = copied || strings.HasPrefix(in.args, "--from=")
		case "ENV":
			home = home || strings.Contains(in.args, "HOME=")
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	gid = cmp.Or(gid, uid)
	for _, id := range []string{uid, gid} {
		if n, err := strconv.Atoi(id); err != nil || n <= 0 {
			t.Errorf("Dockerfile: runtime USER %q: want a numeric non-root uid:gid (Kubernetes' runAsNonRoot checks numbers)", user)
			break
		}
	}
	// The scratch stage has what it copies from the build stage: CA
	// certificates, and a passwd entry for the user.
	if !copied {
		t.Errorf("Dockerfile: the runtime stage copies nothing from the build stage")
	}
	if !bytes.Contains(data, []byte("/etc/ssl/certs/ca-certificates.crt")) {
		t.Errorf("Dockerfile: no CA certificates (/etc/ssl/certs/ca-certificates.crt) for HTTPS to catalogs and storage")
	}
	if !bytes.Contains(data, []byte("etc/passwd")) || !bytes.Contains(data, []byte(":x:"+uid+":"+gid+":")) {
		t.Errorf("Dockerfile: no /etc/passwd entry for the runtime user %s:%s", uid, gid)
	}
	if !home {
		t.Errorf("Dockerfile: the runtime stage sets no HOME (icebloom resolves ~/.iceberg-go.yaml and fails without one)")
	}
	var ep []string
	if err := json.Unmarshal([]byte(entrypoint), &ep); err != nil || len(ep) == 0 || filepath.Base(ep[0]) != "icebloom" {
		t.Errorf("Dockerfile: ENTRYPOINT %s: want the exec form running icebloom (it handles SIGTERM itself)", entrypoint)
	}
}

// staticBuildEnv enables TestDeployStaticBinary. Rebuilding every package
// without cgo takes minutes on a loaded 2-core machine, more than a plain
// `go test ./...` should spend inside its 10-minute budget, so .ci/run runs
// it as a step of its own with its own timeout (sharing the build cache).
const staticBuildEnv = "ICEBLOOM_STATIC_BUILD"

// TestDeployStaticBinary builds ./cmd/icebloom as the Dockerfile does and
// checks that the binary is static, so that it runs FROM scratch, that its
// embedded SQLite catalog works without cgo, and that it reports the
// revision it was built from.
func TestDeployStaticBinary(t *testing.T) {
	if os.Getenv(staticBuildEnv) != "1" {
		t.Skipf("rebuilds every package without cgo: run with %s=1 (as .ci/run does: %s=1 go test -run TestDeployStaticBinary -timeout 30m ./cmd/icebloom)",
			staticBuildEnv, staticBuildEnv)
	}
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	root := deployRepoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "icebloom")
	// -buildvcs=auto is go build's default, as in the Dockerfile's build
	// stage; a machine's GOFLAGS may turn the VCS stamp off.
	buildCmd := exec.CommandContext(t.Context(), goTool, "build", "-buildvcs=auto", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/icebloom")
	buildCmd.Dir = root
	buildCmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	start := time.Now()
	if out, err := buildCmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	t.Logf("built in %s", time.Since(start).Round(time.Millisecond))

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary has a PT_INTERP program header: it needs a dynamic loader")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %q", libs)
	}

	if runtime.GOOS != "linux" {
		return
	}
	// In an empty environment, as in the image: quickstart creates the
	// embedded catalog (SQLite through sqliteshim, without cgo) and
	// maintain then opens it.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"quickstart", "--files", "2", "--rows", "20"}, {"maintain"}} {
		runCmd := exec.CommandContext(t.Context(), bin, args...)
		runCmd.Dir = work
		runCmd.Env = []string{"HOME=" + work}
		if out, err := runCmd.CombinedOutput(); err != nil {
			t.Fatalf("static icebloom %v on the embedded catalog: %v\n%s", args, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "warehouse", "catalog.db")); err != nil {
		t.Errorf("the embedded catalog was not created: %v", err)
	}

	// The binary names the commit it was built from, when it was built
	// from a git checkout.
	out, err := exec.CommandContext(t.Context(), bin, "--output", "json", "version").Output()
	if err != nil {
		t.Fatalf("static icebloom version: %v", err)
	}
	var v VersionOutput
	if err := json.Unmarshal(out, &v); err != nil || v.Module != modulePath {
		t.Fatalf("static icebloom version: %s (%v)", out, err)
	}
	// go build stamps the revision of a checkout whose .git is a
	// directory, not of a git worktree (.git a file), nor of a Docker
	// build context (.dockerignore leaves .git out).
	git := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD")
	git.Dir = root
	head, err := git.Output()
	if fi, serr := os.Stat(filepath.Join(root, ".git")); serr == nil && fi.IsDir() && err == nil {
		if v.Revision != strings.TrimSpace(string(head)) {
			t.Errorf("static icebloom version: revision %q, want the checkout's HEAD %s", v.Revision, head)
		}
	} else {
		t.Logf("not a git checkout go build stamps: version %+v", v)
	}
}

// TestDeployValidators checks the checkers the tests above rely on.
func TestDeployValidators(t *testing.T) {
	for ref, ok := range map[string]bool{
		"minio/minio:RELEASE.2025-09-07T16-13-09Z":         true,
		"golang:1.26.8-bookworm":                           true,
		"icebloom:0.1.0@sha256:" + strings.Repeat("a", 64): true,
		"golang":        false,
		"golang:latest": false,
		"golang@sha256:" + strings.Repeat("a", 64): false,
		"library/golang:LATEST":                    false,
		"registry.example:5000/icebloom:0.1.0":     false,
		"example.com/team/icebloom:0.1.0":          false,
		"localhost/icebloom:0.1.0":                 false,
	} {
		if err := deployCheckImage(ref); (err == nil) != ok {
			t.Errorf("deployCheckImage(%q) = %v, want ok %v", ref, err, ok)
		}
	}
	for schedule, ok := range map[string]bool{
		"17 * * * *":                 true,
		"*/15 1-5 * JAN-MAR MON-FRI": true,
		"0 0 1,15 * ?":               true,
		"0 0 * * 6":                  true,
		"0 0 * * 7":                  false, // robfig/cron, which Kubernetes uses, has 0-6
		"@hourly":                    false,
		"17 * * *":                   false,
		"60 * * * *":                 false,
		"0 24 * * *":                 false,
		"0 0 0 * *":                  false,
		"0 0 * 13 *":                 false,
		"*/0 * * * *":                false,
		"5-1 * * * *":                false,
		"0 0 * * MON-XYZ":            false,
		"? * * * *":                  false,
	} {
		if err := checkCronSchedule(schedule); (err == nil) != ok {
			t.Errorf("checkCronSchedule(%q) = %v, want ok %v", schedule, err, ok)
		}
	}
	got := parseDockerfile([]byte("# c\nFROM a:1 AS b\nRUN x \\\n  # inner comment\n  y\n\nUSER 1:1\n"))
	want := []dockerInstruction{{2, "FROM", "a:1 AS b"}, {3, "RUN", "x  y"}, {7, "USER", "1:1"}}
	if !slices.Equal(got, want) {
		t.Errorf("parseDockerfile = %+v, want %+v", got, want)
	}
}

// TestDeployCompactAboveAgrees: the Indexed Job's shards and the CronJob's
// maintain merge past the same --compact-above, so a run's merge, if its
// linking shard does not run it, is run by the next maintain at the same
// threshold, and neither merges an index the other would leave.
func TestDeployCompactAboveAgrees(t *testing.T) {
	root := deployRepoRoot(t)
	var job kubeJob
	deployLoadKube(t, filepath.Join(root, "docs", "kubernetes", "indexed-job.yaml"), &job)
	var cron kubeCronJob
	deployLoadKube(t, filepath.Join(root, "docs", "kubernetes", "cronjob.yaml"), &cron)
	value := func(args []string) string {
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--compact-above="); ok {
				return v
			}
			if a == "--compact-above" && i+1 < len(args) {
				return args[i+1]
			}
		}
		return "" // the default
	}
	shards := value(job.Spec.Template.Spec.Containers[0].Args)
	maintain := value(cron.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args)
	if shards != maintain {
		t.Fatalf("the shards merge past --compact-above %q, maintain past %q: want the same", shards, maintain)
	}
	if shards == "" {
		t.Fatal("neither manifest sets --compact-above: set it in both, so that changing one shows")
	}
}
