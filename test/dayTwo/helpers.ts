// A temporary repository with a foundation stack file, the foundation outputs a deployed cluster
// would have, and a CLI context wired to a fake Talos cluster and a fake clock.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as path from "node:path";
import { type DayTwoContext, type DayTwoDeps, progressSink } from "../../automation/dayTwo/deps";
import { TalosctlClient } from "../../automation/dayTwo/talosctl";
import { makeRepo, testContext } from "../automation/helpers";
import { FakeClock, type FakeNode, FakeTalos } from "./fakeTalos";
import { type TalosctlCall, fakeTalosctl } from "./fakeTalosctl";

/** The schematic of the fixture's installer images. */
export const SCHEMATIC = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";

/** The fixture cluster: three control planes, three workers. */
export const NODES: readonly Pick<FakeNode, "name" | "address" | "role">[] = [
  { name: "cp-1", address: "192.0.2.11", role: "controlplane" },
  { name: "cp-2", address: "192.0.2.12", role: "controlplane" },
  { name: "cp-3", address: "192.0.2.13", role: "controlplane" },
  { name: "w-1", address: "192.0.2.21", role: "worker" },
  { name: "w-2", address: "192.0.2.22", role: "worker" },
  { name: "w-3", address: "192.0.2.23", role: "worker" },
];

/** The stack file: a comment and flow-style entries to prove they survive a bump. */
export function stackYaml(talos = "v1.13.9", kubernetes = "1.36.3", nodes = NODES): string {
  return [
    "# Staging (test fixture). This comment must survive a version bump.",
    "config:",
    "  talos-platform:cluster:",
    "    name: staging",
    "    endpoint: api.staging.example.net",
    `    talosVersion: ${talos} # bumped by upgrade talos`,
    `    kubernetesVersion: ${kubernetes}`,
    // Pinned, as the shipped stack files pin it: a Talos 1.14 stack needs it (the generator's 1.13).
    "    configContract: v1.13.9",
    "  talos-platform:nodes:",
    ...nodes.map((n) => `    - { name: ${n.name}, role: ${n.role}, platform: proxmox }`),
    "",
  ].join("\n");
}

/** The stack file with cluster.rollout.maxUnavailableWorkers set. */
export function stackWithRollout(max: number): string {
  return stackYaml("v1.13.9", "1.36.3", NODES).replace(
    "  talos-platform:nodes:",
    `    rollout: { maxUnavailableWorkers: ${max} }\n  talos-platform:nodes:`,
  );
}

/** A generated machine config of a node, multi-document like Talos 1.13's. */
export function generatedConfig(name: string, role: string, talos = "v1.13.9"): string {
  return [
    "version: v1alpha1",
    "machine:",
    `  type: ${role}`,
    "  token: secret-machine-token",
    "  install:",
    `    image: factory.talos.dev/nocloud-installer/${SCHEMATIC}:${talos}`,
    "    disk: /dev/sda",
    "cluster:",
    "  clusterName: staging",
    "---",
    "apiVersion: v1alpha1",
    "kind: HostnameConfig",
    `hostname: ${name}`,
    "auto: off",
    "",
  ].join("\n");
}

/** The foundation outputs of the fixture cluster. */
export function foundationOutputs(
  nodes = NODES,
  versions = { talos: "v1.13.9", kubernetes: "1.36.3" },
): OutputMap {
  const byRole = (role: string) =>
    Object.fromEntries(nodes.filter((n) => n.role === role).map((n) => [n.name, n.address]));
  return {
    clusterName: { value: "staging", secret: false },
    endpoint: { value: "https://api.staging.example.net:6443", secret: false },
    nodes: {
      value: { controlplane: byRole("controlplane"), worker: byRole("worker") },
      secret: false,
    },
    talosVersion: { value: versions.talos, secret: false },
    kubernetesVersion: { value: versions.kubernetes, secret: false },
    configContract: { value: versions.talos, secret: false },
    configHashes: { value: {}, secret: false },
    machineConfigurations: {
      value: Object.fromEntries(
        nodes.map((n) => [n.name, generatedConfig(n.name, n.role, versions.talos)]),
      ),
      secret: true,
    },
    installerImages: {
      value: Object.fromEntries(
        nodes.map((n) => [
          n.name,
          `factory.talos.dev/nocloud-installer/${SCHEMATIC}:${versions.talos}`,
        ]),
      ),
      secret: false,
    },
    talosconfig: {
      value: "context: staging\ncontexts:\n  staging:\n    ca: c2VjcmV0\n",
      secret: true,
    },
    kubeconfig: { value: "apiVersion: v1\n", secret: true },
  };
}

/** Everything a day-two test needs. */
export interface DayTwoFixture {
  readonly root: string;
  readonly ctx: ReturnType<typeof testContext> & DayTwoContext;
  readonly talos: FakeTalos;
  readonly clock: FakeClock;
  readonly stackFile: string;
  /** Questions asked, in order. */
  readonly questions: string[];
  /** The answers the fake operator gives, in order (default: yes). */
  readonly answers: boolean[];
  /** With `talosctl: true`, every talosctl run the real client made. */
  readonly talosctlCalls: TalosctlCall[];
}

/** A repository, a deployed fixture cluster with nodes matching the stack, and a context over both. */
export function dayTwoFixture(
  options: {
    nodes?: typeof NODES;
    stack?: string;
    outputs?: OutputMap;
    fake?: (nodes: typeof NODES, clock: FakeClock) => FakeTalos;
    /**
     * Run the real talosctl client over a talosctl that answers from the fake cluster in talosctl's
     * own output formats (argument lists and parsers included), instead of the fake client.
     */
    talosctl?: boolean;
  } = {},
): DayTwoFixture {
  const nodes = options.nodes ?? NODES;
  const root = makeRepo({
    foundation: {
      project: "talos-platform",
      stacks: { staging: options.stack ?? stackYaml("v1.13.9", "1.36.3", nodes) },
    },
  });
  const clock = new FakeClock();
  const talos =
    options.fake?.(nodes, clock) ??
    new FakeTalos(
      nodes.map((n) => ({ ...n, config: generatedConfig(n.name, n.role), schematic: SCHEMATIC })),
      clock,
    );
  const questions: string[] = [];
  const answers: boolean[] = [];
  const tmpDir = fs.mkdtempSync(path.join(root, "tmp-"));
  const base = testContext({ repoRoot: root, clock: () => clock.now() });
  const talosctl = fakeTalosctl(talos);
  const deps: Partial<DayTwoDeps> = {
    talos: options.talosctl
      ? (connection) => {
          talos.connections.push(connection);
          return new TalosctlClient({
            connection,
            run: talosctl.run,
            progress: progressSink(base),
          });
        }
      : talos.factory,
    clock,
    confirm: async (question) => {
      questions.push(question);
      return answers.length > 0 ? answers.shift()! : true;
    },
    tmpDir,
  };
  base.workspaces.outputs = options.outputs ?? foundationOutputs(nodes);
  const ctx = Object.assign(base, { dayTwo: deps });
  return {
    root,
    ctx,
    talos,
    clock,
    stackFile: path.join(root, "Pulumi.staging.yaml"),
    questions,
    answers,
    talosctlCalls: talosctl.calls,
  };
}

/** The stack file's text. */
export function readStack(fixture: DayTwoFixture): string {
  return fs.readFileSync(fixture.stackFile, "utf8");
}
