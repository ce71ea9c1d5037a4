package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
)

// The tokens, as the real provider's schema names them.
const (
	tokSecrets        = "talos:machine/secrets:Secrets"
	tokApply          = "talos:machine/configurationApply:ConfigurationApply"
	tokBootstrap      = "talos:machine/bootstrap:Bootstrap"
	tokKubeconfig     = "talos:cluster/kubeconfig:Kubeconfig"
	tokSchematic      = "talos:imageFactory/schematic:Schematic"
	fnMachineConfig   = "talos:machine/getConfiguration:getConfiguration"
	fnClientConfig    = "talos:client/getConfiguration:getConfiguration"
	fnImageURLs       = "talos:imageFactory/getUrls:getUrls"
	fnHealth          = "talos:cluster/getHealth:getHealth"
	defaultApplyMode  = "auto"
	defaultRenewal    = "720h"
	defaultK8sTimeout = 10 * time.Minute
)

// replaceKeys are the inputs whose change replaces the resource (RequiresReplace in the Terraform
// schema the real provider bridges).
var replaceKeys = map[string][]string{
	tokSecrets:   {"talosVersion"},
	tokSchematic: {"schematic"},
}

type provider struct {
	plugin.UnimplementedProvider
}

func newProvider() *provider { return &provider{} }

func (p *provider) GetPluginInfo(context.Context) (plugin.PluginInfo, error) {
	v := semver.MustParse(version)
	return plugin.PluginInfo{Version: &v}, nil
}

func (p *provider) Handshake(
	context.Context, plugin.ProviderHandshakeRequest,
) (*plugin.ProviderHandshakeResponse, error) {
	return &plugin.ProviderHandshakeResponse{AcceptSecrets: true, AcceptResources: true}, nil
}

func (p *provider) GetSchema(context.Context, plugin.GetSchemaRequest) (plugin.GetSchemaResponse, error) {
	schema, err := json.Marshal(map[string]any{
		"name":              "talos",
		"version":           version,
		"pluginDownloadURL": "github://api.github.com/pulumiverse",
	})
	return plugin.GetSchemaResponse{Schema: schema}, err
}

func (p *provider) CheckConfig(_ context.Context, req plugin.CheckConfigRequest) (plugin.CheckConfigResponse, error) {
	return plugin.CheckConfigResponse{Properties: req.News}, nil
}

func (p *provider) DiffConfig(context.Context, plugin.DiffConfigRequest) (plugin.DiffConfigResponse, error) {
	return plugin.DiffResult{Changes: plugin.DiffNone}, nil
}

func (p *provider) Configure(context.Context, plugin.ConfigureRequest) (plugin.ConfigureResponse, error) {
	return plugin.ConfigureResponse{}, nil
}

func (p *provider) SignalCancellation(context.Context) error { return nil }

func (p *provider) Close() error { return nil }

// Check validates a resource's inputs: required inputs present and enumerations respected.
func (p *provider) Check(_ context.Context, req plugin.CheckRequest) (plugin.CheckResponse, error) {
	var failures []plugin.CheckFailure
	fail := func(key, reason string) {
		failures = append(failures, plugin.CheckFailure{Property: resource.PropertyKey(key), Reason: reason})
	}
	news := req.News
	switch string(req.Type) {
	case tokApply:
		requireKeys(news, fail, "node")
		if mode, ok := stringOf(news["applyMode"]); ok {
			switch mode {
			case "auto", "reboot", "no_reboot", "staged", "staged_if_needing_reboot":
			default:
				fail("applyMode", fmt.Sprintf("applyMode must be one of auto, reboot, no_reboot, staged, staged_if_needing_reboot; got %q", mode))
			}
		}
	case tokBootstrap:
		requireKeys(news, fail, "node")
	case tokKubeconfig:
		requireKeys(news, fail, "node", "clientConfiguration")
	case tokSecrets:
		if v, ok := stringOf(news["talosVersion"]); ok {
			if _, err := contractOf(v); err != nil {
				fail("talosVersion", err.Error())
			}
		}
	case tokSchematic:
	default:
		return plugin.CheckResponse{}, fmt.Errorf("unknown resource type %s", req.Type)
	}
	return plugin.CheckResponse{Properties: news, Failures: failures}, nil
}

func requireKeys(m resource.PropertyMap, fail func(string, string), keys ...string) {
	for _, key := range keys {
		if v, ok := m[resource.PropertyKey(key)]; !ok || v.IsNull() {
			fail(key, fmt.Sprintf("Missing required argument. The argument %q is required, but no definition was found.", key))
		}
	}
}

// Diff compares old and new inputs, key by key, as the bridge does for a Terraform plan.
func (p *provider) Diff(_ context.Context, req plugin.DiffRequest) (plugin.DiffResult, error) {
	ignored := map[string]bool{}
	for _, key := range req.IgnoreChanges {
		ignored[key] = true
	}
	keys := map[resource.PropertyKey]bool{}
	for k := range req.OldInputs {
		keys[k] = true
	}
	for k := range req.NewInputs {
		keys[k] = true
	}
	replacing := map[string]bool{}
	for _, key := range replaceKeys[string(req.Type)] {
		replacing[key] = true
	}
	result := plugin.DiffResult{Changes: plugin.DiffNone, DetailedDiff: map[string]plugin.PropertyDiff{}}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, string(k))
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		if ignored[key] {
			continue
		}
		oldV, hadOld := req.OldInputs[resource.PropertyKey(key)]
		newV, hasNew := req.NewInputs[resource.PropertyKey(key)]
		if hadOld && hasNew && !newV.ContainsUnknowns() && plain(oldV).DeepEquals(plain(newV)) {
			continue
		}
		if !hadOld && (!hasNew || newV.IsNull()) {
			continue
		}
		kind := plugin.DiffUpdate
		switch {
		case !hadOld:
			kind = plugin.DiffAdd
		case !hasNew:
			kind = plugin.DiffDelete
		}
		if replacing[key] {
			kind = kind.AsReplace()
			result.ReplaceKeys = append(result.ReplaceKeys, resource.PropertyKey(key))
		}
		result.Changes = plugin.DiffSome
		result.ChangedKeys = append(result.ChangedKeys, resource.PropertyKey(key))
		result.DetailedDiff[key] = plugin.PropertyDiff{Kind: kind, InputDiff: true}
	}
	return result, nil
}

func (p *provider) Create(ctx context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
	news := req.Properties
	var (
		id      string
		outputs resource.PropertyMap
		err     error
	)
	switch string(req.Type) {
	case tokSecrets:
		id = "machine_secrets"
		if req.Preview {
			outputs = withUnknowns(news, "machineSecrets", "clientConfiguration")
			break
		}
		outputs, err = createSecrets(news)
	case tokApply:
		id = "machine_configuration_apply"
		outputs, err = applyConfiguration(ctx, news, req.Preview, timeoutOf(news, "create", 10*time.Minute))
	case tokBootstrap:
		id = "machine_bootstrap"
		outputs = copyMap(news)
		if !req.Preview {
			err = bootstrap(ctx, news, timeoutOf(news, "create", 20*time.Minute))
		}
	case tokKubeconfig:
		id = "cluster_kubeconfig"
		if req.Preview {
			outputs = withUnknowns(news, "kubeconfigRaw", "kubernetesClientConfiguration")
			break
		}
		outputs, err = kubeconfig(ctx, news, timeoutOf(news, "create", defaultK8sTimeout))
	case tokSchematic:
		return plugin.CreateResponse{}, fmt.Errorf(
			"the Image Factory cannot be reached from the engine tier; use the vanilla schematic (no extensions) in test stacks")
	default:
		return plugin.CreateResponse{}, fmt.Errorf("unknown resource type %s", req.Type)
	}
	if err != nil {
		return plugin.CreateResponse{}, err
	}
	return plugin.CreateResponse{ID: resource.ID(id), Properties: outputs, Status: resource.StatusOK}, nil
}

func (p *provider) Update(ctx context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
	news := req.NewInputs
	switch string(req.Type) {
	case tokApply:
		outputs, err := applyConfiguration(ctx, news, req.Preview, timeoutOf(news, "update", 10*time.Minute))
		if err != nil {
			return plugin.UpdateResponse{}, err
		}
		return plugin.UpdateResponse{Properties: outputs, Status: resource.StatusOK}, nil
	case tokSecrets, tokKubeconfig:
		// Only inputs that do not change the generated values (ignored or timeouts) reach an update.
		outputs := copyMap(req.OldOutputs)
		for k, v := range news {
			outputs[k] = v
		}
		return plugin.UpdateResponse{Properties: outputs, Status: resource.StatusOK}, nil
	default:
		return plugin.UpdateResponse{Properties: copyMap(news), Status: resource.StatusOK}, nil
	}
}

// Read returns the state as it is: the real provider reads nothing back from nodes either.
func (p *provider) Read(_ context.Context, req plugin.ReadRequest) (plugin.ReadResponse, error) {
	return plugin.ReadResponse{
		ReadResult: plugin.ReadResult{ID: req.ID, Inputs: req.Inputs, Outputs: req.State},
		Status:     resource.StatusOK,
	}, nil
}

func (p *provider) Delete(ctx context.Context, req plugin.DeleteRequest) (plugin.DeleteResponse, error) {
	if string(req.Type) == tokApply {
		if err := resetOnDestroy(ctx, req.Outputs, timeoutOf(req.Outputs, "delete", 10*time.Minute)); err != nil {
			return plugin.DeleteResponse{}, err
		}
	}
	return plugin.DeleteResponse{Status: resource.StatusOK}, nil
}

func (p *provider) Invoke(ctx context.Context, req plugin.InvokeRequest) (plugin.InvokeResponse, error) {
	args := req.Args
	var (
		out resource.PropertyMap
		err error
	)
	switch string(req.Tok) {
	case fnMachineConfig:
		out, err = machineConfiguration(args)
	case fnClientConfig:
		out, err = clientConfiguration(args)
	case fnImageURLs:
		out, err = imageURLs(args)
	case fnHealth:
		out, err = health(ctx, args)
	default:
		return plugin.InvokeResponse{}, fmt.Errorf("unknown function %s", req.Tok)
	}
	if err != nil {
		return plugin.InvokeResponse{}, err
	}
	return plugin.InvokeResponse{Properties: out}, nil
}

// ---- property helpers ----

// plain removes the secret wrappers, recursively, so values can be read and compared.
func plain(v resource.PropertyValue) resource.PropertyValue {
	switch {
	case v.IsSecret():
		return plain(v.SecretValue().Element)
	case v.IsOutput():
		return plain(v.OutputValue().Element)
	case v.IsObject():
		out := resource.PropertyMap{}
		for k, e := range v.ObjectValue() {
			out[k] = plain(e)
		}
		return resource.NewObjectProperty(out)
	case v.IsArray():
		out := make([]resource.PropertyValue, len(v.ArrayValue()))
		for i, e := range v.ArrayValue() {
			out[i] = plain(e)
		}
		return resource.NewArrayProperty(out)
	}
	return v
}

func stringOf(v resource.PropertyValue) (string, bool) {
	v = plain(v)
	if v.IsString() {
		return v.StringValue(), true
	}
	return "", false
}

func boolOf(v resource.PropertyValue) bool {
	v = plain(v)
	return v.IsBool() && v.BoolValue()
}

func objectOf(v resource.PropertyValue) resource.PropertyMap {
	v = plain(v)
	if v.IsObject() {
		return v.ObjectValue()
	}
	return resource.PropertyMap{}
}

func strings_(v resource.PropertyValue) []string {
	v = plain(v)
	if !v.IsArray() {
		return nil
	}
	var out []string
	for _, e := range v.ArrayValue() {
		if e.IsString() {
			out = append(out, e.StringValue())
		}
	}
	return out
}

func str(m resource.PropertyMap, key string) string {
	s, _ := stringOf(m[resource.PropertyKey(key)])
	return s
}

func copyMap(m resource.PropertyMap) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func withUnknowns(m resource.PropertyMap, keys ...string) resource.PropertyMap {
	out := copyMap(m)
	for _, key := range keys {
		out[resource.PropertyKey(key)] = resource.MakeComputed(resource.NewStringProperty(""))
	}
	return out
}

// sensitive is a value of a Sensitive attribute of the Terraform schema. The bridge returns those as
// plain values (Pulumi's Terraform bridge marks secrets in the schema, not in the values it returns);
// the SDK's additionalSecretOutputs for the schema's secret properties, and the program, make them
// secret. Returning them wrapped instead would change what the program receives: a secret nested
// inside an output the program also marks secret arrives double-wrapped.
func sensitive(s string) resource.PropertyValue {
	return resource.NewStringProperty(s)
}

// timeoutOf reads `timeouts.<op>` (a Go duration such as "10m"), else the default.
func timeoutOf(m resource.PropertyMap, op string, fallback time.Duration) time.Duration {
	if s := str(objectOf(m["timeouts"]), op); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	return fallback
}
