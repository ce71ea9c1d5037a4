// Command talos-emulator runs emulated Talos nodes on loopback addresses until its time-out, a
// signal, POST /shutdown on the control API, or (with --stop-on-stdin-close) its parent going away.
//
//	talos-emulator --node cp1=127.0.0.11 --node cp2=127.0.0.12 --node w1=127.0.0.21 --timeout 20m
//
// It prints one JSON line on stdout once every node listens (the control API URL and the nodes);
// logs go to stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

type nodeFlags []emulator.NodeSpec

func (f *nodeFlags) String() string { return fmt.Sprint(*f) }

// Set takes name=address or name=address+address (or a comma-separated list of them).
func (f *nodeFlags) Set(value string) error {
	for _, item := range strings.Split(value, ",") {
		name, address, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return fmt.Errorf("--node %q: expected name=address, for example cp1=127.0.0.11", item)
		}

		// name=address+other: a node holding several addresses (its Talos API on the first).
		var addrs []netip.Addr

		for _, text := range strings.Split(address, "+") {
			addr, err := netip.ParseAddr(text)
			if err != nil {
				return fmt.Errorf("--node %q: %w", item, err)
			}

			addrs = append(addrs, addr)
		}

		*f = append(*f, emulator.NodeSpec{Name: name, Address: addrs[0], Extra: addrs[1:]})
	}

	return nil
}

// ready is the line printed once the emulator serves.
type ready struct {
	Control string            `json:"control"`
	Version string            `json:"version"`
	Nodes   []readyNode       `json:"nodes"`
	Timings map[string]string `json:"timings"`
}

type readyNode struct {
	Name     string `json:"name"`
	Address  string `json:"address"`
	Endpoint string `json:"endpoint"`
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "talos-emulator:", err)
		os.Exit(1)
	}
}

// run serves until the time-out, a signal, POST /shutdown or (if asked) stdin closing.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var nodes nodeFlags

	flags := flag.NewFlagSet("talos-emulator", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Var(&nodes, "node", "a node as name=address on 127.0.0.0/8 (repeat, or comma-separate)")
	version := flags.String("talos-version", "v1.13.0", "the Talos version nodes run until upgraded")
	control := flags.String("control", "127.0.0.1:0", "listen address of the control API (loopback)")
	timeout := flags.Duration("timeout", 30*time.Minute, "stop after this long, whatever happens")
	apiPort := flags.Int("api-port", 50000, "the Talos API port on every node address")
	scale := flags.Float64("timing-scale", 1, "multiply every emulated delay (boot, install, etcd join) by this")
	stopOnStdinClose := flags.Bool("stop-on-stdin-close", false, "stop when stdin closes (the parent process went away)")

	if err := flags.Parse(args); err != nil {
		return err
	}

	if len(nodes) == 0 {
		return errors.New("no nodes: give at least one --node name=address")
	}

	if *timeout <= 0 {
		return errors.New("--timeout must be positive: the emulator always stops by itself")
	}

	controlAddr, err := netip.ParseAddrPort(*control)
	if err != nil || !controlAddr.Addr().IsLoopback() {
		return fmt.Errorf("--control %q: expected a loopback address:port", *control)
	}

	logger := log.New(stderr, "talos-emulator: ", log.LstdFlags|log.Lmicroseconds)
	timings := scaled(emulator.DefaultTimings, *scale)

	emu, err := emulator.New(emulator.Options{Version: *version, APIPort: *apiPort, Timings: timings, Logger: logger})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()

	listener, err := net.Listen("tcp", controlAddr.String())
	if err != nil {
		return fmt.Errorf("control API: %w", err)
	}

	server := &http.Server{Handler: emu.ControlHandler(cancel), ReadHeaderTimeout: 10 * time.Second}

	go server.Serve(listener) //nolint:errcheck // ends with Shutdown

	info := ready{Control: "http://" + listener.Addr().String(), Version: *version, Timings: map[string]string{
		"boot": timings.Boot.String(), "services": timings.Services.String(), "shutdown": timings.Shutdown.String(),
		"etcdJoin": timings.EtcdJoin.String(), "install": timings.Install.String(),
	}}

	for _, spec := range nodes {
		if _, err = emu.AddNode(spec); err != nil {
			emu.Stop()

			return err
		}

		info.Nodes = append(info.Nodes, readyNode{Name: spec.Name, Address: spec.Address.String(), Endpoint: net.JoinHostPort(spec.Address.String(), fmt.Sprint(*apiPort))})
	}

	if *stopOnStdinClose {
		go func() {
			_, _ = io.Copy(io.Discard, stdin) //nolint:errcheck
			logger.Print("stdin closed; stopping")
			cancel()
		}()
	}

	line, err := json.Marshal(info)
	if err != nil {
		return err
	}

	fmt.Fprintln(stdout, string(line))

	<-ctx.Done()

	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		logger.Printf("time-out of %s reached; stopping", *timeout)
	}

	shutdownCtx, shutdownCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutdownCancel()

	_ = server.Shutdown(shutdownCtx) //nolint:errcheck

	emu.Stop()
	logger.Print("stopped")

	return nil
}

func scaled(t emulator.Timings, factor float64) emulator.Timings {
	if factor <= 0 {
		factor = 1
	}

	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }

	return emulator.Timings{
		Boot: scale(t.Boot), Services: scale(t.Services), Shutdown: scale(t.Shutdown), EtcdJoin: scale(t.EtcdJoin), Install: scale(t.Install),
	}
}
