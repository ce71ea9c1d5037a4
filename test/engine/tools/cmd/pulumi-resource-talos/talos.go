package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/cluster"
	"github.com/siderolabs/talos/pkg/cluster/check"
	"github.com/siderolabs/talos/pkg/conditions"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/bundle"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	machinetype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/gendata"
	"github.com/siderolabs/talos/pkg/machinery/platforms"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// clientCertificateTTL is how long the generated admin client certificate is valid (the Talos
// API's default, as the real provider uses).
const clientCertificateTTL = constants.TalosAPIDefaultCertificateValidityDuration

func contractOf(talosVersion string) (*config.VersionContract, error) {
	if talosVersion == "" {
		return config.TalosVersionCurrent, nil
	}
	return config.ParseContractFromVersion(talosVersion)
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

func unb64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// ---- talos:machine/secrets:Secrets ----

func createSecrets(news resource.PropertyMap) (resource.PropertyMap, error) {
	contract, err := contractOf(str(news, "talosVersion"))
	if err != nil {
		return nil, err
	}
	bundle, err := secrets.NewBundle(secrets.NewClock(), contract)
	if err != nil {
		return nil, err
	}
	client, err := bundle.GenerateTalosAPIClientCertificateWithTTL(role.MakeSet(role.Admin), clientCertificateTTL)
	if err != nil {
		return nil, err
	}
	pair := func(c *x509.PEMEncodedCertificateAndKey) resource.PropertyValue {
		return resource.NewObjectProperty(resource.PropertyMap{
			"cert": resource.NewStringProperty(b64(c.Crt)),
			"key":  sensitive(b64(c.Key)),
		})
	}
	kubernetes := resource.PropertyMap{
		"bootstrapToken":            sensitive(bundle.Secrets.BootstrapToken),
		"secretboxEncryptionSecret": sensitive(bundle.Secrets.SecretboxEncryptionSecret),
	}
	if bundle.Secrets.AESCBCEncryptionSecret != "" {
		kubernetes["aescbcEncryptionSecret"] = sensitive(bundle.Secrets.AESCBCEncryptionSecret)
	}
	outputs := copyMap(news)
	outputs["machineSecrets"] = resource.NewObjectProperty(resource.PropertyMap{
		"certs": resource.NewObjectProperty(resource.PropertyMap{
			"etcd":          pair(bundle.Certs.Etcd),
			"k8s":           pair(bundle.Certs.K8s),
			"k8sAggregator": pair(bundle.Certs.K8sAggregator),
			"k8sServiceaccount": resource.NewObjectProperty(resource.PropertyMap{
				"key": sensitive(b64(bundle.Certs.K8sServiceAccount.Key)),
			}),
			"os": pair(bundle.Certs.OS),
		}),
		"cluster": resource.NewObjectProperty(resource.PropertyMap{
			"id":     resource.NewStringProperty(bundle.Cluster.ID),
			"secret": sensitive(bundle.Cluster.Secret),
		}),
		"secrets": resource.NewObjectProperty(kubernetes),
		"trustdinfo": resource.NewObjectProperty(resource.PropertyMap{
			"token": sensitive(bundle.TrustdInfo.Token),
		}),
	})
	outputs["clientConfiguration"] = resource.NewObjectProperty(resource.PropertyMap{
		"caCertificate":     resource.NewStringProperty(b64(bundle.Certs.OS.Crt)),
		"clientCertificate": resource.NewStringProperty(b64(client.Crt)),
		"clientKey":         sensitive(b64(client.Key)),
	})
	return outputs, nil
}

// bundleOf turns the `machineSecrets` input back into Talos' secrets bundle.
func bundleOf(m resource.PropertyMap) (*secrets.Bundle, error) {
	certs := objectOf(m["certs"])
	pair := func(key string) (*x509.PEMEncodedCertificateAndKey, error) {
		c := objectOf(certs[resource.PropertyKey(key)])
		crt, err := unb64(str(c, "cert"))
		if err != nil {
			return nil, fmt.Errorf("machineSecrets.certs.%s.cert: %w", key, err)
		}
		k, err := unb64(str(c, "key"))
		if err != nil {
			return nil, fmt.Errorf("machineSecrets.certs.%s.key: %w", key, err)
		}
		return &x509.PEMEncodedCertificateAndKey{Crt: crt, Key: k}, nil
	}
	out := &secrets.Bundle{
		Clock: secrets.NewFixedClock(time.Now()),
		Cluster: &secrets.Cluster{
			ID: str(objectOf(m["cluster"]), "id"), Secret: str(objectOf(m["cluster"]), "secret"),
		},
		Secrets: &secrets.Secrets{
			BootstrapToken:            str(objectOf(m["secrets"]), "bootstrapToken"),
			SecretboxEncryptionSecret: str(objectOf(m["secrets"]), "secretboxEncryptionSecret"),
			AESCBCEncryptionSecret:    str(objectOf(m["secrets"]), "aescbcEncryptionSecret"),
		},
		TrustdInfo: &secrets.TrustdInfo{Token: str(objectOf(m["trustdinfo"]), "token")},
		Certs:      &secrets.Certs{},
	}
	var err error
	if out.Certs.Etcd, err = pair("etcd"); err != nil {
		return nil, err
	}
	if out.Certs.K8s, err = pair("k8s"); err != nil {
		return nil, err
	}
	if out.Certs.K8sAggregator, err = pair("k8sAggregator"); err != nil {
		return nil, err
	}
	if out.Certs.OS, err = pair("os"); err != nil {
		return nil, err
	}
	sa, err := unb64(str(objectOf(certs["k8sServiceaccount"]), "key"))
	if err != nil {
		return nil, fmt.Errorf("machineSecrets.certs.k8sServiceaccount.key: %w", err)
	}
	out.Certs.K8sServiceAccount = &x509.PEMEncodedKey{Key: sa}
	return out, nil
}

// ---- talos:machine/getConfiguration:getConfiguration ----

// machineConfiguration generates a node's machine configuration exactly the way the real provider
// does: Talos' generator with the given secrets and version contract, then every patch through
// Talos' configpatcher (strategic merge or JSON 6902; unknown fields are an error).
func machineConfiguration(args resource.PropertyMap) (resource.PropertyMap, error) {
	var machineType machinetype.Type
	switch str(args, "machineType") {
	case "controlplane":
		machineType = machinetype.TypeControlPlane
	case "worker":
		machineType = machinetype.TypeWorker
	default:
		return nil, fmt.Errorf("machineType must be controlplane or worker; got %q", str(args, "machineType"))
	}
	secretsBundle, err := bundleOf(objectOf(args["machineSecrets"]))
	if err != nil {
		return nil, err
	}
	talosVersion := str(args, "talosVersion")
	if talosVersion == "" {
		talosVersion = majorMinor(gendata.VersionTag)
	}
	contract, err := contractOf(talosVersion)
	if err != nil {
		return nil, err
	}
	kubernetesVersion := str(args, "kubernetesVersion")
	if kubernetesVersion == "" {
		kubernetesVersion = constants.DefaultKubernetesVersion
	}
	genOptions := []generate.Option{
		generate.WithClusterDiscovery(true),
		generate.WithDNSDomain(constants.DefaultDNSDomain),
		generate.WithInstallDisk("/dev/sda"),
		generate.WithInstallImage(fmt.Sprintf("%s/%s/installer:%s", gendata.ImagesRegistry, gendata.ImagesUsername, gendata.VersionTag)),
		generate.WithSecretsBundle(secretsBundle),
		generate.WithVersionContract(contract),
	}
	patches, err := configpatcher.LoadPatches(strings_(args["configPatches"]))
	if err != nil {
		return nil, fmt.Errorf("error parsing config patch: %w", err)
	}
	options := []bundle.Option{
		bundle.WithInputOptions(&bundle.InputOptions{
			ClusterName: str(args, "clusterName"),
			Endpoint:    str(args, "clusterEndpoint"),
			KubeVersion: strings.TrimPrefix(kubernetesVersion, "v"),
			GenOptions:  genOptions,
		}),
		bundle.WithVerbose(false),
	}
	if machineType == machinetype.TypeControlPlane {
		options = append(options, bundle.WithPatchControlPlane(patches))
	} else {
		options = append(options, bundle.WithPatchWorker(patches))
	}
	configBundle, err := bundle.NewBundle(options...)
	if err != nil {
		return nil, err
	}
	comments := encoder.CommentsDisabled
	if boolOf(args["docs"]) {
		comments |= encoder.CommentsDocs
	}
	if boolOf(args["examples"]) {
		comments |= encoder.CommentsExamples
	}
	data, err := configBundle.Serialize(comments, machineType)
	if err != nil {
		return nil, err
	}
	out := copyMap(args)
	out["id"] = resource.NewStringProperty(str(args, "clusterName"))
	out["kubernetesVersion"] = resource.NewStringProperty(kubernetesVersion)
	out["talosVersion"] = resource.NewStringProperty(talosVersion)
	out["machineConfiguration"] = sensitive(string(data))
	return out, nil
}

func majorMinor(tag string) string {
	parts := strings.SplitN(strings.TrimSpace(tag), ".", 3)
	if len(parts) < 2 {
		return tag
	}
	return parts[0] + "." + parts[1]
}

// ---- talos:client/getConfiguration:getConfiguration ----

func clientConfiguration(args resource.PropertyMap) (resource.PropertyMap, error) {
	cc := objectOf(args["clientConfiguration"])
	cfg, err := talosClientConfig(str(args, "clusterName"), cc)
	if err != nil {
		return nil, err
	}
	context := cfg.Contexts[cfg.Context]
	context.Endpoints = strings_(args["endpoints"])
	context.Nodes = strings_(args["nodes"])
	data, err := cfg.Bytes()
	if err != nil {
		return nil, err
	}
	out := copyMap(args)
	out["id"] = resource.NewStringProperty(str(args, "clusterName"))
	out["talosConfig"] = sensitive(string(data))
	return out, nil
}

func talosClientConfig(name string, cc resource.PropertyMap) (*clientconfig.Config, error) {
	ca, err := unb64(str(cc, "caCertificate"))
	if err != nil {
		return nil, fmt.Errorf("clientConfiguration.caCertificate: %w", err)
	}
	crt, err := unb64(str(cc, "clientCertificate"))
	if err != nil {
		return nil, fmt.Errorf("clientConfiguration.clientCertificate: %w", err)
	}
	key, err := unb64(str(cc, "clientKey"))
	if err != nil {
		return nil, fmt.Errorf("clientConfiguration.clientKey: %w", err)
	}
	return clientconfig.NewConfig(name, nil, ca, &x509.PEMEncodedCertificateAndKey{Crt: crt, Key: key}), nil
}

// ---- talos:imageFactory/getUrls:getUrls ----

const imageFactory = "https://factory.talos.dev"

func imageURLs(args resource.PropertyMap) (resource.PropertyMap, error) {
	arch := platforms.Arch(str(args, "architecture"))
	if arch == "" {
		arch = "amd64"
	}
	version := "v" + strings.TrimPrefix(str(args, "talosVersion"), "v")
	schematic := str(args, "schematicId")
	platform := str(args, "platform")
	host := strings.TrimPrefix(imageFactory, "https://")
	image := func(path string) resource.PropertyValue {
		return resource.NewStringProperty(fmt.Sprintf("%s/image/%s/%s/%s", imageFactory, schematic, version, path))
	}
	urls := resource.PropertyMap{
		"installer": resource.NewStringProperty(fmt.Sprintf("%s/%s-installer/%s:%s", host, platform, schematic, version)),
	}
	switch platform {
	case "metal":
		p := platforms.MetalPlatform()
		urls["installerSecureboot"] = resource.NewStringProperty(fmt.Sprintf("%s/%s-installer-secureboot/%s:%s", host, platform, schematic, version))
		urls["iso"] = image(p.ISOPath(arch))
		urls["isoSecureboot"] = image(p.SecureBootISOPath(arch))
		urls["diskImage"] = image(p.DiskImageDefaultPath(arch))
		urls["diskImageSecureboot"] = image(p.SecureBootDiskImageDefaultPath(arch))
		urls["pxe"] = resource.NewStringProperty(fmt.Sprintf("https://pxe.%s/pxe/%s/%s/%s", host, schematic, version, p.PXEScriptPath(arch)))
		urls["kernel"] = image(p.KernelPath(arch))
		urls["kernelCommandLine"] = image(p.CmdlinePath(arch))
		urls["initramfs"] = image(p.InitramfsPath(arch))
		urls["uki"] = image(p.SecureBootUKIPath(arch))
	default:
		var found *platforms.Platform
		for _, p := range platforms.CloudPlatforms() {
			if p.Name == platform {
				found = &p
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("failed to find platform %s", platform)
		}
		if found.SecureBootSupported {
			urls["installerSecureboot"] = resource.NewStringProperty(fmt.Sprintf("%s/%s-installer-secureboot/%s:%s", host, platform, schematic, version))
		}
		for _, method := range found.BootMethods {
			switch method {
			case platforms.BootMethodDiskImage:
				urls["diskImage"] = image(found.DiskImageDefaultPath(arch))
			case platforms.BootMethodISO:
				urls["iso"] = image(found.ISOPath(arch))
			case platforms.BootMethodPXE:
				urls["pxe"] = resource.NewStringProperty(fmt.Sprintf("https://pxe.%s/pxe/%s/%s/%s", host, schematic, version, found.PXEScriptPath(arch)))
			}
		}
	}
	out := copyMap(args)
	out["id"] = resource.NewStringProperty(schematic)
	out["urls"] = resource.NewObjectProperty(urls)
	return out, nil
}

// ---- Talos API operations ----

// metalMode is how a bare-metal node validates a configuration it is given.
type metalMode struct{}

var _ validation.RuntimeMode = metalMode{}

func (metalMode) String() string        { return "metal" }
func (metalMode) RequiresInstall() bool { return true }
func (metalMode) InContainer() bool     { return false }

// retryWindow bounds how long an unreachable node is retried: the operation's timeout, as the
// real provider does, unless TALOS_STANDIN_RETRY_WINDOW (a Go duration) shortens it for tests.
func retryWindow(timeout time.Duration) time.Duration {
	if s := os.Getenv("TALOS_STANDIN_RETRY_WINDOW"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d < timeout {
			return d
		}
	}
	return timeout
}

// withNode runs op against a node as the real provider does: first insecurely (a node in
// maintenance mode), then with the cluster's client certificate, retrying until the window ends;
// InvalidArgument (the node refused the request) is final.
func withNode(ctx context.Context, endpoint, node string, cc resource.PropertyMap, timeout time.Duration,
	op func(context.Context, *client.Client) error,
) error {
	if endpoint == "" {
		endpoint = node
	}
	cfg, err := talosClientConfig("dynamic", cc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(retryWindow(timeout))
	var last error
	for attempt := 0; ; attempt++ {
		last = attemptOnNode(ctx, endpoint, node, cfg, op)
		if last == nil {
			return nil
		}
		if status.Code(last) == codes.InvalidArgument || time.Now().After(deadline) || ctx.Err() != nil {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(time.Duration(min(attempt+1, 5)) * time.Second):
		}
	}
}

func attemptOnNode(ctx context.Context, endpoint, node string, cfg *clientconfig.Config,
	op func(context.Context, *client.Client) error,
) error {
	callCtx, cancel := context.WithTimeout(client.WithNode(ctx, node), 30*time.Second)
	defer cancel()
	c, err := client.New(callCtx, client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(endpoint)) //nolint:gosec // maintenance mode, as the real provider
	if err != nil {
		return err
	}
	if _, err = c.Disks(callCtx); err != nil {
		_ = c.Close()
		if c, err = client.New(callCtx, client.WithConfig(cfg), client.WithEndpoints(endpoint)); err != nil {
			return err
		}
	}
	defer c.Close() //nolint:errcheck
	return op(callCtx, c)
}

// applyConfiguration renders the configuration (input plus patches), validates it as a bare-metal
// node would, and applies it to the node.
func applyConfiguration(ctx context.Context, news resource.PropertyMap, preview bool, timeout time.Duration) (resource.PropertyMap, error) {
	outputs := copyMap(news)
	mode := str(news, "applyMode")
	if mode == "" {
		mode = defaultApplyMode
		outputs["applyMode"] = resource.NewStringProperty(mode)
	}
	if _, ok := news["endpoint"]; !ok || news["endpoint"].IsNull() {
		outputs["endpoint"] = news["node"]
	}
	input := news["machineConfigurationInput"]
	if input.ContainsUnknowns() || news["configPatches"].ContainsUnknowns() {
		outputs["machineConfiguration"] = resource.MakeComputed(resource.NewStringProperty(""))
		outputs["machineConfigurationHash"] = resource.MakeComputed(resource.NewStringProperty(""))
		outputs["resolvedApplyMode"] = resource.MakeComputed(resource.NewStringProperty(""))
		return outputs, nil
	}
	rendered, err := renderConfiguration(str(news, "machineConfigurationInput"), strings_(news["configPatches"]))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(rendered)
	outputs["machineConfiguration"] = sensitive(string(rendered))
	outputs["machineConfigurationHash"] = resource.NewStringProperty(hex.EncodeToString(sum[:]))
	outputs["resolvedApplyMode"] = resource.NewStringProperty(mode)
	if preview {
		return outputs, nil
	}
	// What the node itself checks before taking a configuration (maintenance or running).
	provider, err := configloader.NewFromBytes(rendered)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if _, err := provider.Validate(metalMode{}); err != nil {
		return nil, fmt.Errorf("Error applying configuration: the node would refuse it: %w", err)
	}
	node := str(news, "node")
	resolved := mode
	err = withNode(ctx, str(news, "endpoint"), node, objectOf(news["clientConfiguration"]), timeout,
		func(ctx context.Context, c *client.Client) error {
			var err error
			if resolved, err = resolveApplyMode(ctx, c, mode, rendered); err != nil {
				return err
			}
			_, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
				Mode: machine.ApplyConfigurationRequest_Mode(machine.ApplyConfigurationRequest_Mode_value[strings.ToUpper(resolved)]),
				Data: rendered,
			})
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("Error applying configuration: %w", err)
	}
	outputs["resolvedApplyMode"] = resource.NewStringProperty(resolved)
	return outputs, nil
}

// resolveApplyMode turns the provider's staged_if_needing_reboot into a Talos API mode, as the
// real provider does: a dry run in AUTO mode asks the node whether the change needs a reboot; if
// it does the config is staged, otherwise applied in AUTO mode. (staged_if_needing_reboot is no
// Talos API mode: sent as it is, it would be the enum's zero value, REBOOT.) Every other mode is
// sent as it is.
func resolveApplyMode(ctx context.Context, c *client.Client, mode string, rendered []byte) (string, error) {
	if mode != "staged_if_needing_reboot" {
		return mode, nil
	}
	dry, err := c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Mode: machine.ApplyConfigurationRequest_AUTO, Data: rendered, DryRun: true,
	})
	if err != nil {
		return "", err
	}
	for _, m := range dry.GetMessages() {
		if m.GetMode() == machine.ApplyConfigurationRequest_REBOOT {
			return "staged", nil
		}
	}
	return "auto", nil
}

func renderConfiguration(input string, patchTexts []string) ([]byte, error) {
	if len(patchTexts) == 0 {
		return []byte(input), nil
	}
	patches, err := configpatcher.LoadPatches(patchTexts)
	if err != nil {
		return nil, fmt.Errorf("Error loading config patches: %w", err)
	}
	out, err := configpatcher.Apply(configpatcher.WithBytes([]byte(input)), patches)
	if err != nil {
		return nil, fmt.Errorf("Error applying config patches: %w", err)
	}
	return out.Bytes()
}

// resetOnDestroy resets the node as the real provider's Delete does: STATE and EPHEMERAL wiped
// (the machine config and etcd data; the installation stays), then, with a reboot, it waits until
// the node answers in maintenance mode.
func resetOnDestroy(ctx context.Context, outputs resource.PropertyMap, timeout time.Duration) error {
	onDestroy := objectOf(outputs["onDestroy"])
	if !boolOf(onDestroy["reset"]) {
		return nil
	}
	node := str(outputs, "node")
	endpoint := str(outputs, "endpoint")
	if endpoint == "" {
		endpoint = node
	}
	err := withNode(ctx, endpoint, node, objectOf(outputs["clientConfiguration"]), timeout,
		func(ctx context.Context, c *client.Client) error {
			return c.ResetGeneric(ctx, &machine.ResetRequest{
				Graceful: boolOf(onDestroy["graceful"]),
				Reboot:   boolOf(onDestroy["reboot"]),
				SystemPartitionsToWipe: []*machine.ResetPartitionSpec{
					{Label: constants.StatePartitionLabel, Wipe: true},
					{Label: constants.EphemeralPartitionLabel, Wipe: true},
				},
			})
		})
	if err != nil {
		return fmt.Errorf("Error resetting machine: %w", err)
	}
	if !boolOf(onDestroy["reboot"]) {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for !inMaintenance(ctx, endpoint, node) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("Error resetting machine: %s did not answer in maintenance mode within %s", node, timeout)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// inMaintenance tells whether the node answers without a client certificate (maintenance mode).
func inMaintenance(ctx context.Context, endpoint, node string) bool {
	callCtx, cancel := context.WithTimeout(client.WithNode(ctx, node), 10*time.Second)
	defer cancel()
	c, err := client.New(callCtx, client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(endpoint)) //nolint:gosec // maintenance mode, as the real provider
	if err != nil {
		return false
	}
	defer c.Close() //nolint:errcheck
	_, err = c.Disks(callCtx)
	return err == nil
}

func bootstrap(ctx context.Context, news resource.PropertyMap, timeout time.Duration) error {
	err := withNode(ctx, str(news, "endpoint"), str(news, "node"), objectOf(news["clientConfiguration"]), timeout,
		func(ctx context.Context, c *client.Client) error {
			return c.Bootstrap(ctx, &machine.BootstrapRequest{})
		})
	if err != nil {
		return fmt.Errorf("bootstrapping error: %w", err)
	}
	return nil
}

func kubeconfig(ctx context.Context, news resource.PropertyMap, timeout time.Duration) (resource.PropertyMap, error) {
	var raw []byte
	err := withNode(ctx, str(news, "endpoint"), str(news, "node"), objectOf(news["clientConfiguration"]), timeout,
		func(ctx context.Context, c *client.Client) error {
			var err error
			raw, err = c.Kubeconfig(ctx)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("failed to retrieve kubeconfig: %w", err)
	}
	outputs := copyMap(news)
	outputs["kubeconfigRaw"] = sensitive(string(raw))
	if _, ok := news["certificateRenewalDuration"]; !ok {
		outputs["certificateRenewalDuration"] = resource.NewStringProperty(defaultRenewal)
	}
	outputs["kubernetesClientConfiguration"] = kubernetesClient(raw)
	return outputs, nil
}

// kubernetesClient reads the admin credentials out of a kubeconfig (base64 PEM, as the provider
// returns them).
func kubernetesClient(raw []byte) resource.PropertyValue {
	field := func(name string) string {
		for _, line := range strings.Split(string(raw), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, name+":") {
				return strings.TrimSpace(strings.TrimPrefix(line, name+":"))
			}
		}
		return ""
	}
	return resource.NewObjectProperty(resource.PropertyMap{
		"host":              resource.NewStringProperty(field("server")),
		"caCertificate":     resource.NewStringProperty(field("certificate-authority-data")),
		"clientCertificate": resource.NewStringProperty(field("client-certificate-data")),
		"clientKey":         sensitive(field("client-key-data")),
	})
}

// health runs Talos' own cluster checks client side, as the real provider's getHealth does
// (terraform-provider-talos: a Talos client on the endpoints, check.DefaultClusterChecks, or
// check.PreBootSequenceChecks with skipKubernetesChecks, waited for up to timeouts.read); the
// Kubernetes checks use the kubeconfig Talos hands out, at the cluster endpoint.
func health(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	timeout := 10 * time.Minute
	if s := str(objectOf(args["timeouts"]), "read"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			timeout = d
		}
	}
	cfg, err := talosClientConfig("dynamic", objectOf(args["clientConfiguration"]))
	if err != nil {
		return nil, err
	}
	c, err := client.New(ctx, client.WithConfig(cfg), client.WithEndpoints(strings_(args["endpoints"])...))
	if err != nil {
		return nil, fmt.Errorf("failed to create talos client: %w", err)
	}
	defer c.Close() //nolint:errcheck
	clientProvider := &cluster.ConfigClientProvider{DefaultClient: c}
	defer clientProvider.Close() //nolint:errcheck
	controlPlanes, err := cluster.IPsToNodeInfos(strings_(args["controlPlaneNodes"]))
	if err != nil {
		return nil, fmt.Errorf("failed to generate node infos: %w", err)
	}
	workers, err := cluster.IPsToNodeInfos(strings_(args["workerNodes"]))
	if err != nil {
		return nil, fmt.Errorf("failed to generate node infos: %w", err)
	}
	state := struct {
		cluster.ClientProvider
		cluster.K8sProvider
		cluster.Info
	}{
		ClientProvider: clientProvider,
		K8sProvider:    &cluster.KubernetesClient{ClientProvider: clientProvider},
		Info: &nodeList{
			byType: map[machinetype.Type][]cluster.NodeInfo{
				machinetype.TypeControlPlane: controlPlanes,
				machinetype.TypeWorker:       workers,
			},
			all: append(append([]cluster.NodeInfo{}, controlPlanes...), workers...),
		},
	}
	checks := check.DefaultClusterChecks()
	if boolOf(args["skipKubernetesChecks"]) {
		checks = check.PreBootSequenceChecks()
	}
	checkCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reporter := &lastCondition{}
	if err := check.Wait(checkCtx, &state, checks, reporter); err != nil {
		return nil, fmt.Errorf("cluster health check failed: %w (last: %s)", err, reporter.last)
	}
	out := copyMap(args)
	out["id"] = resource.NewStringProperty("cluster_health")
	return out, nil
}

// nodeList is the cluster.Info of the nodes the check was given.
type nodeList struct {
	byType map[machinetype.Type][]cluster.NodeInfo
	all    []cluster.NodeInfo
}

func (l *nodeList) Nodes() []cluster.NodeInfo                         { return l.all }
func (l *nodeList) NodesByType(t machinetype.Type) []cluster.NodeInfo { return l.byType[t] }

// lastCondition keeps the last state a check reported, for the error.
type lastCondition struct{ last string }

func (r *lastCondition) Update(condition conditions.Condition) { r.last = condition.String() }
