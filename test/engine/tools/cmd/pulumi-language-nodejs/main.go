// A Node.js language host for the engine tier (`npm run test:engine`).
//
// Pulumi's own pulumi-language-nodejs lives in a Go module of its own
// (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3) that the Go module proxy
// available to this project does not serve, at any version. This host speaks the same
// LanguageRuntime protocol (the engine starts it, it prints its port, the engine calls Handshake,
// GetRequiredPackages and Run) and runs the program the way the real host does: through the
// @pulumi/pulumi package's own `cmd/run` entry, with the configuration in PULUMI_CONFIG and
// PULUMI_CONFIG_SECRET_KEYS and the TypeScript options of Pulumi.yaml. Everything the program
// does after that (ts-node, resource registrations, invokes, errors) is the real SDK's.
//
// Left out, because the CLI never asks for them here: dependency installation, `pulumi about`,
// code generation, packing, plugins written in Node.js, the debugger, Bun, synchronous invokes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is set at build time (-ldflags -X main.version=…) to the @pulumi/pulumi version it serves.
var version = "3.0.0"

// exitAfterReportedError is the exit code the SDK's run entry uses after it has shown the user an
// actionable error: the engine must not add a message of its own.
const exitAfterReportedError = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string
	tracing       string
	// cancel stops running programs when the engine calls Cancel.
	cancelCtx context.Context
	cancel    context.CancelFunc
}

func main() {
	tracing := flag.String("tracing", "", "tracing endpoint (passed on to the program)")
	runtime := flag.String("runtime", "nodejs", "only nodejs is supported")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.String("root", "", "accepted for compatibility; the engine's root directory")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}
	if *runtime != "nodejs" {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: runtime %q is not supported here\n", *runtime)
		os.Exit(1)
	}
	engineAddress := ""
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	cancelServer := make(chan bool)
	go func() {
		<-ctx.Done()
		stop()
		close(cancelServer)
	}()
	if engineAddress != "" {
		// Exit when the engine goes away, as every plugin does.
		if err := rpcutil.Healthcheck(ctx, engineAddress, 5*time.Minute, stop); err != nil {
			fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: engine health check: %v\n", err)
			os.Exit(1)
		}
	}
	runCtx, cancelRuns := context.WithCancel(context.Background())
	h := &host{engineAddress: engineAddress, tracing: *tracing, cancelCtx: runCtx, cancel: cancelRuns}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancelServer,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from the first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	h.engineAddress = req.GetEngineAddress()
	h.mu.Unlock()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancel()
	return &emptypb.Empty{}, nil
}

// GetRequiredPackages lists the provider packages the program's node_modules declare, as the real
// host does: every package.json with `"pulumi": {"resource": true}` names a plugin, its version
// and where to download it from.
func (h *host) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	found := map[string]*pulumirpc.PackageDependency{}
	dir := req.GetInfo().GetProgramDirectory()
	if err := collectPackages(filepath.Join(dir, "node_modules"), found, map[string]bool{}); err != nil {
		return nil, err
	}
	packages := make([]*pulumirpc.PackageDependency, 0, len(found))
	for _, pkg := range found {
		packages = append(packages, pkg)
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

type packageJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Pulumi  struct {
		Resource bool   `json:"resource"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Server   string `json:"server"`
	} `json:"pulumi"`
}

// collectPackages walks node_modules (scoped folders and nested node_modules included).
func collectPackages(dir string, found map[string]*pulumirpc.PackageDependency, seen map[string]bool) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || seen[real] {
		return nil //nolint:nilerr // a missing node_modules has no packages
	}
	seen[real] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil //nolint:nilerr
	}
	for _, entry := range entries {
		name := entry.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, "@") {
			if err := collectPackages(path, found, seen); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(path, "package.json"))
		if err == nil {
			var info packageJSON
			if json.Unmarshal(data, &info) == nil && info.Pulumi.Resource {
				name := info.Pulumi.Name
				if name == "" {
					name = strings.TrimPrefix(info.Name, "@pulumi/")
				}
				v := info.Pulumi.Version
				if v == "" {
					v = info.Version
				}
				if v != "" && !strings.HasPrefix(v, "v") {
					v = "v" + v
				}
				found[name+"@"+v] = &pulumirpc.PackageDependency{
					Kind: "resource", Name: name, Version: v, Server: info.Pulumi.Server,
				}
			}
		}
		if err := collectPackages(filepath.Join(path, "node_modules"), found, seen); err != nil {
			return err
		}
	}
	return nil
}

// Run runs the program with the SDK's run entry and reports how it ended.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "could not find node on the $PATH: " + err.Error()}, nil
	}
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	runPath, err := resolveModule(node, programDir, "@pulumi/pulumi/cmd/run")
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	configJSON, err := programConfig(req.GetConfig())
	if err != nil {
		return &pulumirpc.RunResponse{Error: "failed to serialize configuration: " + err.Error()}, nil
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}

	env := append(os.Environ(), "PULUMI_CONFIG="+configJSON, "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON))
	options := info.GetOptions().AsMap()
	if typescript, ok := options["typescript"].(bool); !ok || typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if tsconfig, ok := options["tsconfig"].(string); ok && tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+tsconfig)
	}
	var args []string
	if nodeargs, ok := options["nodeargs"].(string); ok && nodeargs != "" {
		args = append(args, strings.Fields(nodeargs)...)
	}
	args = append(args, runPath)
	add := func(flagName, value string) {
		if value != "" {
			args = append(args, "--"+flagName, value)
		}
	}
	h.mu.Lock()
	engineAddress := h.engineAddress
	h.mu.Unlock()
	add("monitor", req.GetMonitorAddress())
	add("engine", engineAddress)
	add("organization", req.GetOrganization())
	add("project", req.GetProject())
	add("root-directory", info.GetRootDirectory())
	add("stack", req.GetStack())
	add("pwd", programDir)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	// Stop the program when the engine cancels or the request ends: SIGINT first, as a terminal would.
	cmdCtx, cancel := context.WithCancel(h.cancelCtx)
	defer cancel()
	context.AfterFunc(ctx, cancel)
	cmd := exec.CommandContext(cmdCtx, node, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = programDir
	cmd.Env = env
	// Node may switch its stdio to non-blocking mode; never hand it our own descriptors.
	cmd.Stdout = struct{ *os.File }{os.Stdout}
	cmd.Stderr = struct{ *os.File }{os.Stderr}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == exitAfterReportedError {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{
			Error: "Problem executing program (could not run language executor): " + err.Error(),
		}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// programConfig is the configuration as the SDK reads it: keys in the `<namespace>:config:<name>`
// form, which every @pulumi/pulumi version understands.
func programConfig(cfg map[string]string) (string, error) {
	out := make(map[string]string, len(cfg))
	for key, value := range cfg {
		parsed, err := config.ParseKey(key)
		if err != nil {
			return "", err
		}
		out[parsed.Namespace()+":config:"+parsed.Name()] = value
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// resolveModule finds a module the way Node.js would from the program's folder.
func resolveModule(node, dir, module string) (string, error) {
	script := fmt.Sprintf("try { console.log(require.resolve(%q)); } catch (e) { console.error(e.code === 'MODULE_NOT_FOUND' ? %q : e.message); process.exit(1); }",
		module, "It looks like the Pulumi SDK has not been installed. Run npm ci in "+dir)
	cmd := exec.Command(node, "-e", script)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s", strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
