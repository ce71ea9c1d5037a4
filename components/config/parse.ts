// The parse phase of a foundation stack file: each section, and each node on its own, through its
// schema (schema.ts). What parsed is kept and what did not is recorded for the schema rule to word, so
// the rules after it see every usable section even when another one is broken.
import type { z } from "zod";
import { FOUNDATION_PROJECT, FOUNDATION_SETTINGS_KEYS } from "./keys";
import { PARSE_OPTIONS } from "./messages";
import type { IndexedNode, RuleInput, SchemaProblem } from "./rules/rule";
import {
  clusterSchema,
  dnsSchema,
  etcdBackupsSchema,
  fluxSchema,
  gcpSchema,
  nodeCommonSchema,
  nodeSchema,
  nodesSchema,
  ociSchema,
  openbaoSchema,
  openstackSchema,
  proxmoxSchema,
} from "./schema";

/** The stack's config values, as read (objects already decoded from the stack file). */
export interface RawStackConfig {
  readonly cluster?: unknown;
  readonly nodes?: unknown;
  readonly proxmox?: unknown;
  readonly oci?: unknown;
  readonly openstack?: unknown;
  readonly gcp?: unknown;
  readonly openbao?: unknown;
  readonly dns?: unknown;
  readonly flux?: unknown;
  readonly etcdBackups?: unknown;
  /** Secret config keys set on the stack; their values are never read here. */
  readonly secretKeys?: ReadonlySet<string>;
  /**
   * Every key set in the project's namespace, secret or not (`cluster`, `proxmoxApiToken`, a
   * misspelt `dsn`). @default the keys given above with a value, and the secret keys
   */
  readonly presentKeys?: ReadonlySet<string>;
  /** The project (config namespace), for messages. @default "talos-platform" */
  readonly project?: string;
}

/** Platform settings keys, in the order their problems are listed. */
const PLATFORM_KEYS = ["proxmox", "oci", "openstack"] as const;
/** Foundation service keys. */
const SERVICE_KEYS = ["gcp", "openbao", "dns", "flux", "etcdBackups"] as const;

/** Parses every section of `raw`; nothing is reported here (see the schema rule). */
export function parseStack(raw: RawStackConfig, stackFile: string): RuleInput {
  const schemaProblems: SchemaProblem[] = [];
  const parse = <T>(key: string | [string, number], schema: z.ZodType<T>, value: unknown) => {
    const result = schema.safeParse(value, PARSE_OPTIONS);
    if (result.success) return result.data;
    const path = typeof key === "string" ? [key] : key;
    schemaProblems.push({ kind: "invalid", key: path, value, issues: result.error.issues });
    return undefined;
  };
  const required = <T>(key: "cluster" | "nodes", schema: z.ZodType<T>) => {
    if (raw[key] !== undefined) return parse(key, schema, raw[key]);
    schemaProblems.push({ kind: "missing", key });
    return undefined;
  };
  const optional = <T>(
    key: (typeof PLATFORM_KEYS | typeof SERVICE_KEYS)[number],
    schema: z.ZodType<T>,
  ) => (raw[key] === undefined ? undefined : parse(key, schema, raw[key]));

  const cluster = required("cluster", clusterSchema);
  const proxmox = optional("proxmox", proxmoxSchema);
  const oci = optional("oci", ociSchema);
  const openstack = optional("openstack", openstackSchema);
  const gcp = optional("gcp", gcpSchema);
  const openbao = optional("openbao", openbaoSchema);
  const dns = optional("dns", dnsSchema);
  const flux = optional("flux", fluxSchema);
  const etcdBackups = optional("etcdBackups", etcdBackupsSchema);
  const rawNodes = required("nodes", nodesSchema) ?? [];
  const nodes: IndexedNode[] = [];
  rawNodes.forEach((value, index) => {
    const result = nodeSchema.safeParse(value, PARSE_OPTIONS);
    if (result.success) {
      nodes.push({ index, node: result.data });
      return;
    }
    // Without a known platform the union stops at it: check what every node has on its own.
    const unknownPlatform = result.error.issues.some(
      (issue) => issue.path.length === 1 && issue.path[0] === "platform",
    );
    const common = unknownPlatform
      ? nodeCommonSchema.safeParse(value, PARSE_OPTIONS).error?.issues
      : undefined;
    schemaProblems.push({
      kind: "invalid",
      key: ["nodes", index],
      value,
      issues: [...result.error.issues, ...(common ?? [])],
    });
  });

  const secretKeys = raw.secretKeys ?? new Set<string>();
  const given = (keys: readonly string[]) =>
    new Set(keys.filter((key) => raw[key as keyof RawStackConfig] !== undefined));
  return {
    project: raw.project ?? FOUNDATION_PROJECT,
    stackFile,
    cluster,
    proxmox,
    oci,
    openstack,
    gcp,
    openbao,
    dns,
    flux,
    etcdBackups,
    platformsGiven: given(PLATFORM_KEYS),
    servicesGiven: given(SERVICE_KEYS),
    secretKeys,
    presentKeys: raw.presentKeys ?? new Set([...given(FOUNDATION_SETTINGS_KEYS), ...secretKeys]),
    nodes,
    rawNodes,
    raw: raw as Readonly<Record<string, unknown>>,
    schemaProblems,
  };
}
