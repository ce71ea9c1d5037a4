// Every Talos patch of the stack file (cluster-wide, per role, per node; inline mappings and YAML
// strings of one or more documents) checked the way Talos reads it, against the configuration schema
// of the release the configs are generated for (patchSchemas.ts: the config contract, capped by the
// provider's generator; talosSchema.ts): valid YAML, mappings, known document kinds, known keys,
// right types; no sections Talos deprecated out of its schema; nothing of the cluster's identity or
// secrets, which come from the cluster's secrets resource only. What a newer Talos the nodes run has
// deprecated is a warning.
import { parseAllDocuments } from "yaml";
import { allowedValues, typeWord } from "../messages";
import { KeyPath, keyOf, Problems } from "../problems";
import { patchListSchema, RawPatch } from "../schema";
import type { TalosConfigSchema, TalosSchemaIssue } from "../talosSchema";
import { checkLabels, checkTaints } from "./labels";
import { type PatchSchemas, patchSchemas } from "./patchSchemas";
import type { Rule } from "./rule";

type Document = Record<string, unknown>;

/** What replaces the machine-config sections Talos moved into documents of their own. */
const REPLACEMENTS: Readonly<Record<string, string>> = {
  "machine.network": "HostnameConfig, LinkConfig, Layer2VIPConfig and ResolverConfig documents",
  "machine.time": "a TimeSyncConfig document",
  "machine.env": "an EnvironmentConfig document",
  "machine.disks": "UserVolumeConfig documents",
  "machine.registries": "RegistryMirrorConfig, RegistryAuthConfig and RegistryTLSConfig documents",
};

/** v1alpha1 keys that hold the cluster's identity and secrets. */
const IDENTITY_PATHS: readonly (readonly string[])[] = [
  ["machine", "token"],
  ["machine", "ca"],
  ["cluster", "id"],
  ["cluster", "secret"],
  ["cluster", "token"],
  ["cluster", "ca"],
  ["cluster", "aggregatorCA"],
  ["cluster", "serviceAccount"],
  ["cluster", "etcd", "ca"],
  ["cluster", "secretboxEncryptionSecret"],
  ["cluster", "aescbcEncryptionSecret"],
];

/** The same, in the documents that carry them from Talos 1.14 on. */
const IDENTITY_DOCUMENT_KEYS: Readonly<Record<string, readonly string[]>> = {
  KubeAPIServerCAConfig: ["issuingCA"],
  KubeAggregatorCAConfig: ["issuingCA"],
  KubeServiceAccountConfig: ["issuer"],
  KubeEtcdEncryptionConfig: ["config"],
  DiscoveryIdentityConfig: ["clusterID", "clusterSecret"],
};

const SECRETS_FIX =
  "The cluster's identity and secrets come from its secrets resource only; remove this from the patch";

const isMapping = (value: unknown): value is Document =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** Keys whose values are never echoed in a message. */
const SECRET_NAME = /key|token|secret|password|passphrase|credential/i;

/** One document of a patch and how to name it in a message. */
interface Located {
  readonly document: Document;
  /** `` (the only document, a v1alpha1 fragment), `in LinkConfig "net0", `, `in document 2 (…), `. */
  readonly where: string;
}

/** The documents of a patch, as Talos splits it; YAML and shape problems are recorded. */
function documentsOf(path: KeyPath, patch: RawPatch, problems: Problems): Document[] | undefined {
  const values: unknown[] = [];
  if (typeof patch === "string") {
    for (const document of parseAllDocuments(patch) as ReturnType<typeof parseAllDocuments> &
      unknown[]) {
      if (document.errors.length > 0) {
        const reason = document.errors[0].message.split("\n")[0].replace(/:$/, "");
        problems.add(path, `is not valid YAML (${reason})`);
        return undefined;
      }
      values.push(document.toJS());
    }
  } else {
    values.push(patch);
  }
  const documents: Document[] = [];
  for (const value of values) {
    // Talos skips empty documents (a trailing `---`).
    if (value === null || value === undefined) continue;
    if (!isMapping(value)) {
      const isJsonPatch = Array.isArray(value) && value.every((op) => isMapping(op) && "op" in op);
      problems.add(
        path,
        isJsonPatch
          ? "is a JSON 6902 patch list; this program takes strategic merge patches only, written as mappings"
          : "expected a mapping (a strategic merge patch)",
        { got: value },
      );
      return undefined;
    }
    documents.push(value);
  }
  return documents;
}

function label(document: Document): string {
  if (typeof document.kind !== "string") return "the v1alpha1 machine config";
  return typeof document.name === "string"
    ? `${document.kind} ${JSON.stringify(document.name)}`
    : document.kind;
}

/** A deep copy of `value` without `$patch: delete` directives (Talos applies them before decoding). */
function withoutDeletes(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value
      .filter((item) => !(isMapping(item) && item.$patch === "delete"))
      .map(withoutDeletes);
  }
  if (!isMapping(value)) return value;
  const copy: Document = {};
  for (const [key, item] of Object.entries(value)) {
    if (isMapping(item) && item.$patch === "delete") continue;
    copy[key] = withoutDeletes(item);
  }
  return copy;
}

/** Removes `path` from a copied document, so a key reported once is not reported again. */
function removeAt(document: Document, path: readonly string[]): void {
  let node: unknown = document;
  for (const key of path.slice(0, -1)) {
    if (!isMapping(node)) return;
    node = node[key];
  }
  if (isMapping(node)) delete node[path[path.length - 1]];
}

function valueAt(document: Document, path: readonly string[]): unknown {
  let node: unknown = document;
  for (const key of path) {
    if (!isMapping(node) || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Records the identity and secret keys a document sets, and removes them from it. */
function checkIdentity(path: KeyPath, { document, where }: Located, problems: Problems): void {
  const kind = document.kind;
  const touched =
    typeof kind === "string"
      ? (IDENTITY_DOCUMENT_KEYS[kind] ?? []).filter((key) => key in document).map((key) => [key])
      : IDENTITY_PATHS.filter((p) => valueAt(document, p) !== undefined).map((p) => [...p]);
  for (const key of touched) {
    problems.add(
      path,
      `${where}sets ${key.join(".")}, part of the cluster's identity and secrets`,
      {
        hint: SECRETS_FIX,
      },
    );
    removeAt(document, key);
  }
}

function wordIssue(
  issue: TalosSchemaIssue,
  at: Located,
  schema: TalosConfigSchema,
  document: Document,
) {
  const release = `Talos ${schema.minor}`;
  const key = keyOf(issue.path);
  const last = issue.path[issue.path.length - 1];
  const got = (value: unknown) =>
    typeof last === "string" && SECRET_NAME.test(last) ? {} : { got: value };
  switch (issue.kind) {
    case "unknownKey": {
      if (issue.deprecated !== undefined) {
        const replacement = REPLACEMENTS[key];
        const hint = replacement
          ? `Use ${replacement}`
          : issue.deprecated
            ? `Talos: ${issue.deprecated}`
            : "Remove it";
        return {
          problem: issue.deprecated
            ? `${at.where}sets ${key}, which ${release} has deprecated (it is not in its configuration schema)`
            : `${at.where}sets ${key}, which ${release} no longer documents (it is not in its configuration schema)`,
          opts: { hint },
        };
      }
      const meant = issue.suggestion && keyOf([...issue.path.slice(0, -1), issue.suggestion]);
      return {
        problem: `${at.where}sets ${key}, which is not a ${release} setting`,
        opts: {
          hint: meant ? `Did you mean ${meant}?` : `See the ${release} configuration reference`,
        },
      };
    }
    case "type":
      return {
        problem: `${at.where}${key} must be ${issue.expected.map(typeWord).join(" or ")}`,
        opts: got(issue.got),
      };
    case "enum":
      return {
        problem: `${at.where}${key} must be one of ${allowedValues(issue.allowed)}`,
        opts: got(issue.got),
      };
    case "pattern":
      return {
        problem: `${at.where}${key} is not written in the form ${release} expects (${issue.pattern})`,
        opts: got(issue.got),
      };
    case "range":
      return { problem: `${at.where}${key} must be ${issue.bound}`, opts: got(issue.got) };
    case "required":
      return { problem: `${at.where}the ${label(document)} document needs ${key}`, opts: {} };
    case "unknownKind":
      return {
        problem: `${at.where}has kind ${issue.got}, which ${release} does not know`,
        opts: {
          hint: issue.suggestion
            ? `Did you mean ${issue.suggestion}?`
            : `See the ${release} configuration reference for the document kinds`,
        },
      };
    case "noKind":
      return {
        problem: `${at.where}is neither a machine-config fragment (machine:, cluster:) nor a document with apiVersion and kind`,
        opts: {},
      };
    default: {
      const unhandled: never = issue;
      throw new Error(`unhandled schema issue ${JSON.stringify(unhandled)}`);
    }
  }
}

/** Labels and taints a patch sets, in Kubernetes' syntax. */
function checkNodeMetadata(path: KeyPath, { document, where }: Located, problems: Problems): void {
  const places: [unknown, string, typeof checkLabels][] =
    document.kind === "KubeNodeConfig"
      ? [
          [document.labels, "labels", checkLabels],
          [document.taints, "taints", checkTaints],
        ]
      : [
          [valueAt(document, ["machine", "nodeLabels"]), "machine.nodeLabels", checkLabels],
          [valueAt(document, ["machine", "nodeTaints"]), "machine.nodeTaints", checkTaints],
        ];
  for (const [values, key, check] of places) {
    if (isMapping(values)) check(path, values, problems, where, ` in ${key}`);
  }
}

/**
 * What the nodes' newer Talos deprecated in a document that fits the contract's schema: a warning
 * for each key, with what replaces it (the `unknownKey` issues of the running release that carry a
 * deprecation note; anything else it says is not this rule's to guess).
 */
function warnDeprecated(
  path: KeyPath,
  at: Located,
  schemas: PatchSchemas,
  reported: readonly TalosSchemaIssue[],
  problems: Problems,
): void {
  const { running, contract } = schemas;
  if (!running || !contract) return;
  const seen = new Set(reported.map((issue) => keyOf(issue.path)));
  for (const issue of running.validateDocument(at.document)) {
    if (issue.kind !== "unknownKey" || issue.deprecated === undefined) continue;
    const key = keyOf(issue.path);
    if (seen.has(key)) continue;
    const replacement = REPLACEMENTS[key];
    problems.warn(
      path,
      `${at.where}sets ${key}, which Talos ${running.minor} (cluster.talosVersion) has deprecated; it is valid for config contract ${contract.minor}, which the configs are generated for`,
      {
        hint: `Before the contract moves to ${running.minor}: ${
          replacement
            ? `use ${replacement}`
            : issue.deprecated
              ? `Talos ${running.minor}: ${issue.deprecated}`
              : "remove it"
        }`,
      },
    );
  }
}

/**
 * A patch of several nodes (`cluster.patches.*`) names no host: every node it reaches would get the
 * same hostname (the program gives each node its own from nodes[].name).
 */
function checkSharedHostname(
  path: KeyPath,
  { document, where }: Located,
  problems: Problems,
): void {
  const sets =
    document.kind === "HostnameConfig"
      ? document.hostname !== undefined
        ? "HostnameConfig hostname"
        : undefined
      : valueAt(document, ["machine", "network", "hostname"]) !== undefined
        ? "machine.network.hostname"
        : undefined;
  if (!sets) return;
  const scope = path[2];
  problems.add(
    path,
    `${where}sets ${sets}, which would give every ${scope === "all" ? "node" : `${String(scope)} node`} the same name`,
    {
      hint: "Each node's hostname comes from nodes[].name; to override one, put the HostnameConfig in that node's nodes[].patches",
    },
  );
}

/** Checks one patch; no contract schema when the stack's Talos release is unknown (reported elsewhere). */
function checkTalosPatch(
  path: KeyPath,
  patch: RawPatch,
  schemas: PatchSchemas,
  problems: Problems,
): void {
  const documents = documentsOf(path, patch, problems);
  if (!documents) return;
  const schema = schemas.contract;
  const seen = new Set<string>();
  documents.forEach((original, i) => {
    const document = withoutDeletes(original) as Document;
    const name = label(document);
    const where =
      documents.length > 1
        ? `in document ${i + 1} (${name}), `
        : typeof document.kind === "string"
          ? `in ${name}, `
          : "";
    const located = { document, where };
    const identity = `${String(document.apiVersion ?? "")}/${name}`;
    if (seen.has(identity)) {
      problems.add(path, `${where}repeats the ${name} document of the same patch`, {
        hint: "Talos refuses a patch with the same document twice; merge them",
      });
    }
    seen.add(identity);
    checkIdentity(path, located, problems);
    const issues = schema?.validateDocument(document) ?? [];
    // machine.network already refused whole (Talos 1.13 dropped it from its schema) says enough.
    const networkRefused = issues.some(
      (issue) => issue.kind === "unknownKey" && keyOf(issue.path) === "machine.network",
    );
    if (path[0] === "cluster" && !networkRefused) checkSharedHostname(path, located, problems);
    checkNodeMetadata(path, located, problems);
    for (const issue of issues) {
      const { problem, opts } = wordIssue(issue, located, schema!, document);
      problems.add(path, problem, opts);
    }
    // A document of a kind the contract does not know was refused whole.
    if (!issues.some((issue) => issue.kind === "unknownKind" || issue.kind === "noKind")) {
      warnDeprecated(path, located, schemas, issues, problems);
    }
  });
}

/** The patches at `value` when they have the right shape; the schema reports them otherwise. */
function patchesAt(value: unknown): RawPatch[] | undefined {
  const result = patchListSchema.safeParse(value);
  return result.success ? result.data : undefined;
}

/**
 * Every patch of the stack file, checked against the release the configs are generated for. A
 * cluster or node that failed its schema still has its patches checked, so one run reports everything.
 */
export const talosPatches: Rule = ({ cluster, nodes, raw, rawNodes }, problems) => {
  const rawCluster = isMapping(raw.cluster) ? raw.cluster : {};
  const text = (key: "talosVersion" | "configContract") =>
    cluster ? cluster[key] : typeof rawCluster[key] === "string" ? rawCluster[key] : undefined;
  // A release's schema is read (a few hundred kB of JSON) only when there is a patch to check.
  let schemas: PatchSchemas | undefined;
  const check = (path: KeyPath, patch: RawPatch) => {
    schemas ??= patchSchemas(text("talosVersion"), text("configContract"));
    checkTalosPatch(path, patch, schemas, problems);
  };
  const rawScopes = isMapping(rawCluster.patches) ? rawCluster.patches : {};
  for (const scope of ["all", "controlplane", "worker"] as const) {
    const list = cluster ? cluster.patches?.[scope] : patchesAt(rawScopes[scope]);
    list?.forEach((patch, i) => check(["cluster", "patches", scope, i], patch));
  }
  const parsed = new Map(nodes.map(({ index, node }) => [index, node]));
  rawNodes.forEach((rawNode, index) => {
    const list = parsed.has(index)
      ? parsed.get(index)!.patches
      : patchesAt(isMapping(rawNode) ? rawNode.patches : undefined);
    list?.forEach((patch, i) => check(["nodes", index, "patches", i], patch));
  });
};
