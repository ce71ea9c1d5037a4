// What the day-two commands know about a cluster before they talk to it: the stack file (the
// versions it asks for, its nodes in order) and the foundation stack's outputs (the nodes'
// addresses, installer images and generated configs, the talosconfig). The stack file gives the
// order (control planes in file order, the first being the bootstrap node); the outputs give
// the addresses, since only the engine knows a cloud node's.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { z } from "zod";
import {
  BOOT_RECORDS_OUTPUT,
  type BootRecord,
  bootRecordsOf,
} from "../../components/talos/bootRecords";
import type { CliContext } from "../context";
import { UserError } from "../errors";
import { readStackFile, requireEnvironment, resolveLayer } from "../layers";
import { readOutputs } from "../stackOutputs";

/** A node's role. */
type Role = "controlplane" | "worker";

/** One node as the stack file declares it. */
interface DeclaredNode {
  readonly name: string;
  readonly role: Role;
  /** proxmox, baremetal, oci, openstack (the stack file's; the program validates it). */
  readonly platform?: string;
}

/** What the stack file asks for. */
export interface StackCluster {
  /** Absolute path of `Pulumi.<env>.yaml`. */
  readonly file: string;
  readonly env: string;
  readonly name: string;
  /** `v1.13.9` as written. */
  readonly talosVersion: string;
  /** `1.36.3` as written. */
  readonly kubernetesVersion: string;
  /** `v1.13.9` as written; absent when the stack file leaves it to talosVersion. */
  readonly configContract?: string;
  /** In file order. */
  readonly nodes: readonly DeclaredNode[];
}

/** A node that exists (it has an address in the outputs). */
export interface ClusterNode extends DeclaredNode {
  /** Talos API address. */
  readonly address: string;
  /** `factory.talos.dev/<platform>-installer/<schematic>:v1.13.9`, when exported. */
  readonly installerImage?: string;
  /**
   * The address its kubelet reports, when exported and not `address` (an OCI node reached on its
   * public IP): health checks must name the node by it ("can't find expected node with IPs").
   */
  readonly kubeletAddress?: string;
}

/** The address a health check names a node by: the kubelet's, else the Talos API's. */
export function healthAddress(node: ClusterNode): string {
  return node.kubeletAddress ?? node.address;
}

/** A deployed cluster: the stack file joined with the foundation outputs. */
export interface DeployedCluster {
  readonly stack: StackCluster;
  readonly clusterName: string;
  /** Control planes in stack-file order, then workers in stack-file order. */
  readonly nodes: readonly ClusterNode[];
  /** Versions the last `up` deployed (the outputs), not necessarily what the nodes run. */
  readonly deployed: { readonly talosVersion: string; readonly kubernetesVersion: string };
  /** Secret: each node's generated machine config. */
  readonly machineConfigurations: Readonly<Record<string, string>>;
  /** The installer the stack asks for (its schematic), by node name; what a schematic roll installs. */
  readonly desiredInstallers: Readonly<Record<string, string>>;
  /** Secret: what each node booted with, as the last `platform up` read it (bootRecords.ts). */
  readonly bootRecords: Readonly<Record<string, BootRecord>>;
  /** Secret. */
  readonly talosconfig: string;
  /** Secret: the admin kubeconfig, when the cluster was bootstrapped (rollout drains through it). */
  readonly kubeconfig?: string;
  /** Declared nodes the outputs do not know yet (never deployed). */
  readonly undeployed: readonly DeclaredNode[];
  /** Things worth telling the operator (deployed nodes no longer in the stack file). */
  readonly notes: readonly string[];
}

const declaredNodeSchema = z.looseObject({
  name: z.string().min(1),
  role: z.enum(["controlplane", "worker"]),
  platform: z.string().optional(),
});
const clusterKeysSchema = z.looseObject({
  name: z.string().min(1),
  talosVersion: z.string().min(1),
  kubernetesVersion: z.union([z.string().min(1), z.number()]),
  configContract: z.string().min(1).optional(),
});

/** Reads the cluster section and the nodes of the foundation's `Pulumi.<env>.yaml`. */
export function readStackCluster(repoRoot: string, env: string): StackCluster {
  const layer = resolveLayer(repoRoot, "foundation");
  requireEnvironment(layer, env);
  const stackFile = readStackFile(layer, env);
  const display = path.basename(stackFile.path);
  const clusterKey = `${layer.project}:cluster`;
  const nodesKey = `${layer.project}:nodes`;
  const cluster = clusterKeysSchema.safeParse(stackFile.config[clusterKey]);
  if (!cluster.success) {
    throw new UserError({
      what: `${display} ${clusterKey}`,
      problem: "needs name, talosVersion and kubernetesVersion",
      got: JSON.stringify(cluster.error.issues.map((issue) => issue.path.join(".") || "(section)")),
      fix: "Fix the stack file (npm run platform -- preview <env> validates all of it)",
    });
  }
  const nodes = z.array(declaredNodeSchema).min(1).safeParse(stackFile.config[nodesKey]);
  if (!nodes.success) {
    throw new UserError({
      what: `${display} ${nodesKey}`,
      problem: "needs a list of nodes, each with a name and a role (controlplane or worker)",
      got: JSON.stringify(nodes.error.issues.map((issue) => issue.path.join(".") || "(list)")),
      fix: "Fix the stack file (npm run platform -- preview <env> validates all of it)",
    });
  }
  return {
    file: stackFile.path,
    env,
    name: cluster.data.name,
    talosVersion: cluster.data.talosVersion,
    kubernetesVersion: String(cluster.data.kubernetesVersion),
    ...(cluster.data.configContract ? { configContract: cluster.data.configContract } : {}),
    nodes: nodes.data.map((node) => ({
      name: node.name,
      role: node.role,
      ...(node.platform ? { platform: node.platform } : {}),
    })),
  };
}

/** Reads the foundation stack's outputs (never creates the stack). */
function readFoundationOutputs(
  ctx: CliContext,
  env: string,
  installCli: boolean,
): Promise<OutputMap> {
  return readOutputs(ctx, { layer: "foundation", env, installCli });
}

const addressesSchema = z.record(z.string(), z.string().min(1));
const outputsSchema = z.object({
  clusterName: z.string().min(1),
  nodes: z.object({ controlplane: addressesSchema, worker: addressesSchema.default({}) }),
  talosVersion: z.string().min(1),
  kubernetesVersion: z.string().min(1),
  talosconfig: z.string().min(1),
  kubeconfig: z.string().optional(),
  machineConfigurations: z.record(z.string(), z.string()).default({}),
  installerImages: z.record(z.string(), z.string()).default({}),
  desiredInstallers: z.record(z.string(), z.string()).default({}),
  kubeletAddresses: z.record(z.string(), z.string()).default({}),
  // Stacks deployed before the records existed have none.
  [BOOT_RECORDS_OUTPUT]: z.unknown().optional(),
});

/** Joins the stack file with the outputs; fails with the missing outputs when the stack was never deployed. */
export function deployedCluster(stack: StackCluster, outputs: OutputMap): DeployedCluster {
  const values = Object.fromEntries(Object.entries(outputs).map(([key, o]) => [key, o.value]));
  const parsed = outputsSchema.safeParse(values);
  if (!parsed.success) {
    throw new UserError({
      what: `foundation/${stack.env}`,
      problem: "the stack's outputs lack what day-two commands need",
      got: JSON.stringify(
        [
          ...new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? "(outputs)"))),
        ].sort(),
      ),
      fix: `Deploy the cluster (or update it to this version of the program) first: npm run platform -- up ${stack.env}`,
    });
  }
  const out = parsed.data;
  const nodes: ClusterNode[] = [];
  const undeployed: DeclaredNode[] = [];
  const notes: string[] = [];
  for (const role of ["controlplane", "worker"] as const) {
    const addresses = out.nodes[role];
    const declared = stack.nodes.filter((node) => node.role === role);
    for (const node of declared) {
      const address = addresses[node.name];
      if (address === undefined) undeployed.push(node);
      else
        nodes.push(
          withKubelet(
            withImage({ ...node, address }, out.installerImages[node.name]),
            out.kubeletAddresses[node.name],
          ),
        );
    }
    const extra = Object.keys(addresses)
      .filter((name) => !declared.some((node) => node.name === name))
      .sort();
    for (const name of extra) {
      notes.push(
        `${name} (${role}) is deployed but no longer in ${path.basename(stack.file)}; it is included until \`up\` removes it`,
      );
      nodes.push(withImage({ name, role, address: addresses[name] }, out.installerImages[name]));
    }
  }
  if (!nodes.some((node) => node.role === "controlplane")) {
    throw new UserError({
      what: `foundation/${stack.env}`,
      problem: "the outputs list no control plane",
      got: JSON.stringify(out.nodes),
      fix: `Deploy the cluster first: npm run platform -- up ${stack.env}`,
    });
  }
  return {
    stack,
    clusterName: out.clusterName,
    nodes,
    deployed: { talosVersion: out.talosVersion, kubernetesVersion: out.kubernetesVersion },
    machineConfigurations: out.machineConfigurations,
    desiredInstallers: out.desiredInstallers,
    bootRecords: bootRecordsOf(out[BOOT_RECORDS_OUTPUT]),
    talosconfig: out.talosconfig,
    ...(out.kubeconfig ? { kubeconfig: out.kubeconfig } : {}),
    undeployed,
    notes,
  };
}

function withImage(node: ClusterNode, image: string | undefined): ClusterNode {
  return image === undefined ? node : { ...node, installerImage: image };
}

function withKubelet(node: ClusterNode, kubelet: string | undefined): ClusterNode {
  return kubelet === undefined || kubelet === node.address
    ? node
    : { ...node, kubeletAddress: kubelet };
}

/** The control planes, in order. */
export function controlPlanes(cluster: { readonly nodes: readonly ClusterNode[] }): ClusterNode[] {
  return cluster.nodes.filter((node) => node.role === "controlplane");
}

/** The workers, in order. */
export function workers(cluster: { readonly nodes: readonly ClusterNode[] }): ClusterNode[] {
  return cluster.nodes.filter((node) => node.role === "worker");
}

/** The stack file joined with the foundation outputs of one environment. */
export async function loadCluster(
  ctx: CliContext,
  env: string,
  installCli: boolean,
): Promise<DeployedCluster> {
  const stack = readStackCluster(ctx.repoRoot, env);
  return deployedCluster(stack, await readFoundationOutputs(ctx, env, installCli));
}
