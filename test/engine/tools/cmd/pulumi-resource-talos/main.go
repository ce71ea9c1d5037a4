// A Talos resource provider for the engine tier (`npm run test:engine`), built on Talos' own
// machinery module (github.com/siderolabs/talos/pkg/machinery, the version
// terraform-provider-talos v0.11.0 uses).
//
// The real plugin, pulumiverse/pulumi-talos v0.8.1, bridges terraform-provider-talos v0.11.0; the
// Go module proxy available to this project serves neither of them (nor the bridge version they
// need), so it cannot be built here. This stand-in answers to the same name and version
// (`talos` 0.8.1) inside the engine tier's own PULUMI_HOME, never in the user's plugin cache, and
// implements the tokens the project uses with the same inputs, outputs, secrecy and replacement
// rules (docs/development.md, "Engine tier"). What matters most
// is that it generates machine configurations the way the real provider does: Talos' config
// generator with the cluster's secrets, then every config patch applied by Talos' own
// configpatcher, so a patch Talos rejects fails the run exactly as it would with the real plugin.
// Talos API calls (apply, bootstrap, kubeconfig, health) use Talos' own client.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
)

// version is the provider version this stand-in answers to (the SDK pins 0.8.1).
var version = "0.8.1"

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.String("tracing", "", "accepted for compatibility")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	cancel := make(chan bool)
	go func() {
		<-ctx.Done()
		stop()
		close(cancel)
	}()
	if args := flag.Args(); len(args) > 0 {
		// Exit when the engine goes away, as every plugin does.
		if err := rpcutil.Healthcheck(ctx, args[0], 5*time.Minute, stop); err != nil {
			fmt.Fprintf(os.Stderr, "pulumi-resource-talos: engine health check: %v\n", err)
			os.Exit(1)
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(srv, plugin.NewProviderServer(newProvider()))
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-talos: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-talos: %v\n", err)
		os.Exit(1)
	}
}
