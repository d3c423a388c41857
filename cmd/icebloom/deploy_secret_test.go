package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// secretRefs walks a YAML document and returns the keys of Secret name it
// references — by env secretKeyRef and by Secret volume items — with
// whether each is optional, and whether a Secret volume of name mounts all
// of its keys (no items).
func secretRefs(doc any, name string, keys map[string]bool) (whole bool) {
	switch v := doc.(type) {
	case map[string]any:
		if ref, ok := v["secretKeyRef"].(map[string]any); ok && ref["name"] == name {
			optional, _ := ref["optional"].(bool)
			key, _ := ref["key"].(string)
			keys[key] = keys[key] || !optional
		}
		if vol, ok := v["secret"].(map[string]any); ok && vol["secretName"] == name {
			optional, _ := vol["optional"].(bool)
			items, _ := vol["items"].([]any)
			if len(items) == 0 {
				whole = true
			}
			for _, it := range items {
				key, _ := it.(map[string]any)["key"].(string)
				keys[key] = keys[key] || !optional
			}
		}
		for _, child := range v {
			whole = secretRefs(child, name, keys) || whole
		}
	case []any:
		for _, child := range v {
			whole = secretRefs(child, name, keys) || whole
		}
	}
	return whole
}

// secretRecipe matches a `kubectl create secret generic icebloom` command
// and the lines it continues on; fromKey a key it gives.
var (
	secretRecipe = regexp.MustCompile(`kubectl create secret generic icebloom[ \t](?:[^\n]*\\\n)*[^\n]*`)
	fromKey      = regexp.MustCompile(`--from-(?:literal|file)=([\w.-]+)`)
)

// TestDeploySecretRecipe: the Secret icebloom that cronjob.yaml,
// indexed-job.yaml and serve.yaml read has one recipe, secret.yaml, which
// each manifest names and which holds every key any of them needs
// (optional ones marked optional where they read them) and documents each;
// no other recipe of it remains in the manifests or README, so whichever
// manifest is applied first makes the Secret all three can use. Before,
// serve.yaml's recipe lacked rest-credential, which the CronJob and the
// Indexed Job mount without optional: applied second, they failed. README's
// Deploy section names compose's serve service.
func TestDeploySecretRecipe(t *testing.T) {
	root := deployRepoRoot(t)
	dir := filepath.Join(root, "docs", "kubernetes")
	recipePath := filepath.Join(dir, "secret.yaml")
	recipeText, err := os.ReadFile(recipePath)
	if err != nil {
		t.Fatalf("the one Secret recipe: %v", err)
	}
	var recipe struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(recipeText, &recipe); err != nil || recipe.Kind != "Secret" || recipe.Metadata.Name != "icebloom" {
		t.Fatalf("secret.yaml: %v; want the Secret icebloom", err)
	}
	var comments strings.Builder
	for _, line := range strings.Split(string(recipeText), "\n") {
		if strings.HasPrefix(line, "#") {
			comments.WriteString(line + "\n")
		}
	}
	for key := range recipe.StringData {
		if !strings.Contains(comments.String(), key) {
			t.Errorf("secret.yaml: key %s is not documented in its comments", key)
		}
	}
	for _, m := range secretRecipe.FindAllString(comments.String(), -1) {
		for _, k := range fromKey.FindAllStringSubmatch(m, -1) {
			if _, ok := recipe.StringData[k[1]]; !ok {
				t.Errorf("secret.yaml: its kubectl line gives %s, which its manifest lacks", k[1])
			}
		}
	}

	for _, name := range []string{"cronjob.yaml", "indexed-job.yaml", "serve.yaml"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "secret.yaml") {
			t.Errorf("%s: does not name secret.yaml, the recipe of the Secret icebloom", name)
		}
		if m := secretRecipe.FindString(string(data)); m != "" {
			t.Errorf("%s: a recipe of its own for the Secret icebloom: %q", name, m)
		}
		keys := map[string]bool{}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if secretRefs(doc, "icebloom", keys) {
				t.Errorf("%s: mounts every key of the Secret icebloom; name the keys it reads", name)
			}
		}
		if len(keys) == 0 {
			t.Errorf("%s: reads nothing of the Secret icebloom", name)
		}
		for key, required := range keys {
			if _, ok := recipe.StringData[key]; !ok {
				t.Errorf("%s: reads key %s of the Secret icebloom, which secret.yaml lacks (applied after another manifest's recipe, it fails)", name, key)
			}
			if strings.HasPrefix(key, "aws-") && required {
				t.Errorf("%s: S3 key %s is not optional: a catalog that vends storage credentials needs none", name, key)
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	deploy := string(readme)
	if i := strings.Index(deploy, "\n## Deploy"); i >= 0 {
		deploy = deploy[i:]
		if j := strings.Index(deploy[1:], "\n## "); j >= 0 {
			deploy = deploy[:j+1]
		}
	}
	if m := secretRecipe.FindString(deploy); m != "" {
		t.Errorf("README's Deploy section has a Secret recipe of its own: %q", m)
	}
	if !strings.Contains(deploy, "docs/kubernetes/secret.yaml") || !strings.Contains(deploy, "`serve` service") {
		t.Errorf("README's Deploy section names neither docs/kubernetes/secret.yaml nor compose's `serve` service")
	}
}
