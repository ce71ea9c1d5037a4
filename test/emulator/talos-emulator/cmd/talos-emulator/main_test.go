package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// start runs the emulator with args; it returns the ready line and a channel with run's result.
func start(t *testing.T, stdin io.Reader, args ...string) (ready, chan error) {
	t.Helper()

	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)

	go func() {
		done <- run(args, stdin, stdoutW, io.Discard)
		stdoutW.Close() //nolint:errcheck
	}()

	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (run: %v)", err, <-done)
	}

	go io.Copy(io.Discard, stdoutR) //nolint:errcheck

	var info ready
	if err = json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}

	return info, done
}

func waitDone(t *testing.T, done chan error, what string) {
	t.Helper()

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: run returned %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the emulator did not stop", what)
	}
}

func TestStopsAfterItsTimeout(t *testing.T) {
	info, done := start(t, strings.NewReader(""), "--node", "cp1=127.77.31.11", "--timeout", "1s")

	if len(info.Nodes) != 1 || info.Nodes[0].Endpoint != "127.77.31.11:50000" || !strings.HasPrefix(info.Control, "http://127.0.0.1:") {
		t.Fatalf("ready line %+v", info)
	}

	waitDone(t, done, "after --timeout 1s")
}

func TestStopsWhenStdinCloses(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	_, done := start(t, stdinR, "--node", "cp1=127.77.32.11", "--timeout", "10m", "--stop-on-stdin-close")

	stdinW.Close() //nolint:errcheck
	waitDone(t, done, "after stdin closed")
}

func TestStopsOnShutdownRequest(t *testing.T) {
	info, done := start(t, strings.NewReader(""), "--node", "cp1=127.77.33.11", "--timeout", "10m")

	resp, err := http.Post(info.Control+"/shutdown", "application/json", nil) //nolint:noctx
	if err != nil {
		t.Fatal(err)
	}

	resp.Body.Close() //nolint:errcheck
	waitDone(t, done, "after POST /shutdown")
}

func TestRefusesWhatItCannotServe(t *testing.T) {
	for name, args := range map[string][]string{
		"no nodes":             {},
		"not loopback":         {"--node", "cp1=192.0.2.11"},
		"no time-out":          {"--node", "cp1=127.77.34.11", "--timeout", "0s"},
		"control not loopback": {"--node", "cp1=127.77.34.11", "--control", "0.0.0.0:0"},
		"bad node flag":        {"--node", "cp1"},
	} {
		if err := run(args, strings.NewReader(""), io.Discard, io.Discard); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
