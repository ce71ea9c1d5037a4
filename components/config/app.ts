// The app layer's stack config: where the foundation's outputs come from, OpenBao's policies, auth and
// mounts, Grafana's folders, data sources and dashboards; every check of the app's stack file is here.
// Policy and dashboard files are read here, so a bad or missing file is reported with every other
// problem, before anything is created.
import type * as pulumi from "@pulumi/pulumi";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { REPO_ROOT } from "../repo/root";
import { checkPlainTextCredentials, checkUrlCredential } from "./rules/credentials";
import { checkTopLevelKeys } from "./rules/keys";
import {
  checkOpenbaoPaths,
  DEFAULT_KUBERNETES_AUTH_PATH,
  DEFAULT_KV_MOUNT,
} from "./rules/openbaoPaths";
import { CLI_KEYS } from "./keys";
import { PARSE_OPTIONS } from "./messages";
import { once, Problems, propertyNames } from "./problems";

/** The app project's folder (policy and dashboard paths are relative to it). */
const APP_DIR = path.join(REPO_ROOT, "app");

const name = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
  error: "expected a lowercase name (letters, digits, - and _)",
});
const duration = z.int().positive();

const appSchema = z.strictObject({
  /**
   * Where the foundation's values come from: its stack outputs (StackReference; needs the
   * foundation's key) or the object it publishes in the gs:// state bucket (CI). @default "stackReference"
   */
  foundationSource: z.enum(["stackReference", "published"]).optional(),
  /** `organization/talos-platform/<env>` unless named. */
  foundationStack: z
    .string()
    .regex(/^[^/\s]+\/[^/\s]+\/[^/\s]+$/, { error: "expected organization/project/stack" })
    .optional(),
  openbao: z.strictObject({
    address: z.url({
      protocol: /^https?$/,
      error: "expected the OpenBao URL, e.g. https://openbao.example.net",
    }),
    /** Not CI's JWT path nor one of OpenBao's own (rules/openbaoPaths.ts). @default "kubernetes" */
    kubernetesAuthPath: name.optional(),
    /** KV version 2 mount; not CI's JWT path nor one of OpenBao's own. @default "secret" */
    kvMount: name.optional(),
    /** Folder of `<policy>.hcl` files, relative to app/. @default "policies" */
    policyDir: z.string().min(1).optional(),
    /** More policies written inline: name → HCL. */
    policies: z.record(name, z.string().min(1)).optional(),
    /** Kubernetes service accounts allowed to log in, and the policies they get. */
    roles: z
      .array(
        z.strictObject({
          name,
          serviceAccounts: z.array(z.string().min(1)).min(1),
          namespaces: z.array(z.string().min(1)).min(1),
          policies: z.array(name).min(1),
          /** Token TTL in seconds. @default 3600 */
          ttl: duration.optional(),
          /** The `aud` the service account's token must carry. @default "openbao" */
          audience: z.string().min(1).optional(),
        }),
      )
      .optional(),
    /** GitHub Actions logs in with its OIDC token: read-only on pull requests, apply on the main branch. */
    ci: z
      .strictObject({
        repository: z.string().regex(/^[\w.-]+\/[\w.-]+$/, { error: "expected owner/repository" }),
        /** @default "main" */
        branch: z.string().min(1).optional(),
        previewPolicies: z.array(name).min(1),
        applyPolicies: z.array(name).min(1),
        /** @default "openbao" */
        audience: z.string().min(1).optional(),
      })
      .optional(),
  }),
  grafana: z
    .strictObject({
      url: z.url({ protocol: /^https?$/, error: "expected the Grafana URL" }),
      folders: z
        .array(
          z.strictObject({
            uid: name,
            title: z.string().min(1),
            /** Dashboard JSON files, relative to app/dashboards. */
            dashboards: z
              .array(z.string().regex(/\.json$/, { error: "expected a .json file" }))
              .optional(),
          }),
        )
        .optional(),
      dataSources: z
        .array(
          z.strictObject({
            name: z.string().min(1),
            type: z.string().min(1),
            url: z.string().min(1),
            isDefault: z.boolean().optional(),
            jsonData: z.record(z.string(), z.unknown()).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});

/** A policy and where it came from. */
export interface PolicySpec {
  readonly name: string;
  readonly hcl: string;
  /** `app/policies/ci.hcl`, or `openbao.policies.<name>`. */
  readonly source: string;
}

/** The app layer's validated settings, files read. */
export interface AppSpec {
  readonly foundationStack: string;
  readonly foundationSource: "stackReference" | "published";
  readonly openbao: {
    readonly address: string;
    readonly kubernetesAuthPath: string;
    readonly kvMount: string;
    readonly policies: readonly PolicySpec[];
    readonly roles: readonly {
      name: string;
      serviceAccounts: string[];
      namespaces: string[];
      policies: string[];
      ttl: number;
      audience: string;
    }[];
    readonly ci?: {
      repository: string;
      branch: string;
      previewPolicies: string[];
      applyPolicies: string[];
      audience: string;
    };
  };
  readonly grafana?: {
    readonly url: string;
    readonly folders: readonly {
      uid: string;
      title: string;
      dashboards: readonly { file: string; json: string; title: string }[];
    }[];
    readonly dataSources: readonly {
      name: string;
      type: string;
      url: string;
      isDefault: boolean;
      jsonData?: Record<string, unknown>;
    }[];
  };
}

/** The app's secret inputs: how Pulumi logs into OpenBao and Grafana. */
export interface AppSecrets {
  readonly openbaoToken?: pulumi.Output<string>;
  /** A CI job's OIDC token, exchanged for an OpenBao token through the `ci` JWT role. */
  readonly openbaoJwt?: pulumi.Output<string>;
  /** The JWT role CI logs in with: `ci-apply` on the main branch, `ci-preview` anywhere else. */
  readonly openbaoJwtRole: "ci-apply" | "ci-preview";
  readonly grafanaAuth?: pulumi.Output<string>;
}

/** Policies OpenBao has without being declared. */
const BUILTIN_POLICIES = new Set(["default"]);

/** CI's policies, generated from the stack (components/app/ciPolicies.ts) when `ci` is set. */
export const CI_APPLY_POLICY = "ci-apply";
export const CI_PREVIEW_POLICY = "ci-preview";

/** Placeholders a policy file may use; replaced with the stack's values. */
function policyPlaceholders(
  settings: Readonly<{ kvMount: string; kubernetesAuthPath: string }>,
): Record<string, string> {
  return { kvMount: settings.kvMount, kubernetesAuthPath: settings.kubernetesAuthPath };
}

/** A sanity check of a policy's HCL: one `path "…" { … }` block at least, braces balanced. */
function policyProblem(hcl: string): string | undefined {
  if (!/path\s+"[^"]+"\s*\{/.test(hcl))
    return 'not an OpenBao policy: no path "…" { capabilities = […] } block';
  let depth = 0;
  for (const char of hcl.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/#.*$/gm, "")) {
    depth += char === "{" ? 1 : char === "}" ? -1 : 0;
    if (depth < 0) return "has a } without its {";
  }
  return depth === 0 ? undefined : "has a { that is never closed";
}

function readPolicies(dir: string, problems: Problems): PolicySpec[] {
  const folder = path.resolve(APP_DIR, dir);
  const shown = path.relative(path.dirname(APP_DIR), folder);
  if (!existsSync(folder)) {
    problems.add(["openbao", "policyDir"], `folder ${shown} does not exist`, {
      hint: "Create it, or point policyDir at the policies",
    });
    return [];
  }
  return readdirSync(folder)
    .filter((file) => file.endsWith(".hcl"))
    .sort()
    .flatMap((file) => {
      const source = path.join(shown, file);
      const hcl = readFileSync(path.join(folder, file), "utf8");
      const policyName = file.slice(0, -".hcl".length);
      const problem = !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(policyName)
        ? "is not a valid policy name (lowercase letters, digits, - and _)"
        : policyProblem(hcl);
      if (problem) {
        problems.addMessage(`${source}: ${problem}`);
        return [];
      }
      return [{ name: policyName, hcl, source }];
    });
}

function readDashboard(file: string, key: (string | number)[], problems: Problems) {
  const fullPath = path.resolve(APP_DIR, "dashboards", file);
  const shown = path.relative(path.dirname(APP_DIR), fullPath);
  if (!existsSync(fullPath)) {
    problems.add(key, `dashboard file ${shown} does not exist`, {
      hint: "Export the dashboard's JSON model there, or drop it from the list",
    });
    return [];
  }
  try {
    const json = readFileSync(fullPath, "utf8");
    const model = JSON.parse(json) as { title?: unknown };
    if (typeof model.title !== "string") {
      problems.addMessage(`${shown}: not a Grafana dashboard model (no "title")`);
      return [];
    }
    return [{ file: shown, json, title: model.title }];
  } catch (error) {
    problems.addMessage(`${shown}: not valid JSON (${(error as Error).message})`);
    return [];
  }
}

/** The secret keys the app layer reads (the CLI resolves the same ones). */
export const APP_SECRET_KEYS = ["openbaoToken", "openbaoJwt", "grafanaAuth"] as const;

/** The app project's name, the namespace of its keys. */
const APP_PROJECT = "talos-platform-app";

/** Every key the app layer's namespace may hold. */
const APP_KEYS: readonly string[] = [
  "foundationStack",
  "foundationSource",
  "openbao",
  "grafana",
  ...APP_SECRET_KEYS,
  ...CLI_KEYS,
];

/** Every key the app layer's sections know, for "did you mean". */
const appSettingKeys = once(() => [
  ...propertyNames(z.toJSONSchema(appSchema, { unrepresentable: "any" })),
]);

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((v) => typeof v === "string") ? value : undefined;
const POLICY_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * What the file and cross-reference checks need, taken from the raw values so they run even when the
 * schema found problems elsewhere. A part with the wrong shape is left out (the schema reports it).
 */
function filesAndReferences(raw: Record<string, unknown>) {
  const openbao = isMapping(raw.openbao) ? raw.openbao : {};
  const grafana = isMapping(raw.grafana) ? raw.grafana : {};
  const policyDir =
    openbao.policyDir === undefined
      ? "policies"
      : typeof openbao.policyDir === "string" && openbao.policyDir !== ""
        ? openbao.policyDir
        : undefined;
  const inline = isMapping(openbao.policies)
    ? Object.entries(openbao.policies).filter(
        (entry): entry is [string, string] =>
          POLICY_NAME.test(entry[0]) && typeof entry[1] === "string" && entry[1] !== "",
      )
    : [];
  const references: { names: string[]; key: (string | number)[] }[] = [];
  (Array.isArray(openbao.roles) ? openbao.roles : []).forEach((role, i) => {
    const names = isMapping(role) ? strings(role.policies) : undefined;
    if (names) references.push({ names, key: ["openbao", "roles", i, "policies"] });
  });
  const ci = isMapping(openbao.ci) ? openbao.ci : {};
  for (const list of ["previewPolicies", "applyPolicies"] as const) {
    const names = strings(ci[list]);
    if (names) references.push({ names, key: ["openbao", "ci", list] });
  }
  const dashboards = (Array.isArray(grafana.folders) ? grafana.folders : []).map((folder) =>
    (isMapping(folder) ? (strings(folder.dashboards) ?? []) : []).map((file) =>
      file.endsWith(".json") ? file : undefined,
    ),
  );
  return { policyDir, inline, references, dashboards };
}

/** URLs of the app layer that must not carry a credential, and where each credential goes instead. */
function checkAppUrls(raw: Record<string, unknown>, problems: Problems): void {
  const openbao = isMapping(raw.openbao) ? raw.openbao : {};
  const grafana = isMapping(raw.grafana) ? raw.grafana : {};
  checkUrlCredential(
    ["openbao", "address"],
    openbao.address,
    "Give the bare URL; the token is the openbaoToken secret (docs/credentials.md)",
    problems,
  );
  checkUrlCredential(
    ["grafana", "url"],
    grafana.url,
    "Give the bare URL; the token is the grafanaAuth secret (docs/credentials.md)",
    problems,
  );
  (Array.isArray(grafana.dataSources) ? grafana.dataSources : []).forEach((source, i) =>
    checkUrlCredential(
      ["grafana", "dataSources", i, "url"],
      isMapping(source) ? source.url : undefined,
      "Give the bare URL and let the data source authenticate another way",
      problems,
    ),
  );
}

/**
 * Each OpenBao role name once: a role is one resource named after it (and one
 * auth/<path>/role/<name>), so the engine would stop partway on the second.
 */
function checkRoleNames(raw: Record<string, unknown>, problems: Problems): void {
  const openbao = isMapping(raw.openbao) ? raw.openbao : {};
  const first = new Map<string, number>();
  (Array.isArray(openbao.roles) ? openbao.roles : []).forEach((role, i) => {
    const roleName = isMapping(role) && typeof role.name === "string" ? role.name : undefined;
    if (roleName === undefined) return;
    const earlier = first.get(roleName);
    if (earlier !== undefined) {
      problems.add(["openbao", "roles", i, "name"], `repeats openbao.roles[${earlier}].name`, {
        got: roleName,
        hint: "Each role needs its own name; merge their service accounts, namespaces and policies into one role, or rename one",
      });
    } else {
      first.set(roleName, i);
    }
  });
}

/**
 * Validates the app layer's values and reads its files, reporting every problem at once. Pure over
 * `raw` (the namespace's keys that are not secret, as read or as written in the stack file) and
 * `secretKeys` (the keys set as secrets): callable without the Pulumi runtime.
 */
export function validateAppConfig(
  raw: Record<string, unknown>,
  stack: string,
  secretKeys: ReadonlySet<string>,
  project = APP_PROJECT,
): AppSpec {
  const stackFile = `app/Pulumi.${stack}.yaml`;
  const problems = new Problems();
  const presentKeys = new Set([...Object.keys(raw), ...secretKeys]);
  checkTopLevelKeys(project, presentKeys, APP_KEYS, problems);
  checkPlainTextCredentials(APP_SECRET_KEYS, presentKeys, secretKeys, stackFile, problems);
  const settings = Object.fromEntries(
    Object.entries(raw).filter(([key]) =>
      ["foundationStack", "foundationSource", "openbao", "grafana"].includes(key),
    ),
  );
  const parsed = appSchema.safeParse(settings, PARSE_OPTIONS);
  if (!parsed.success) {
    problems.addZodIssues([], settings, parsed.error.issues, appSettingKeys(), "docs/app-layer.md");
  }
  checkAppUrls(raw, problems);
  checkRoleNames(raw, problems);
  checkOpenbaoPaths(isMapping(raw.openbao) ? raw.openbao : {}, problems);

  // Files and cross-references: checked whatever the schema found.
  const { policyDir, inline, references, dashboards } = filesAndReferences(raw);
  const fromFiles = policyDir === undefined ? [] : readPolicies(policyDir, problems);
  const inlinePolicies = inline.flatMap(([policyName, hcl]) => {
    const problem = policyProblem(hcl);
    if (problem) problems.add(["openbao", "policies", policyName], problem);
    return problem ? [] : [{ name: policyName, hcl, source: `openbao.policies.${policyName}` }];
  });
  // `${kvMount}` and `${kubernetesAuthPath}` in policies follow the stack (defaults when unset).
  const openbaoRaw = isMapping(raw.openbao) ? raw.openbao : {};
  const text = (value: unknown, fallback: string) =>
    typeof value === "string" && value !== "" ? value : fallback;
  const values = policyPlaceholders({
    kvMount: text(openbaoRaw.kvMount, DEFAULT_KV_MOUNT),
    kubernetesAuthPath: text(openbaoRaw.kubernetesAuthPath, DEFAULT_KUBERNETES_AUTH_PATH),
  });
  const policies = [...fromFiles, ...inlinePolicies].flatMap((policy) => {
    if (policy.name === CI_APPLY_POLICY || policy.name === CI_PREVIEW_POLICY) {
      problems.addMessage(
        `${policy.source}: ${policy.name} is generated from the stack (exactly what CI's runs need); remove it`,
      );
      return [];
    }
    // Anything but the known placeholders is a typo.
    const unknown = [...policy.hcl.matchAll(/\$\{([^}]*)\}/g)]
      .map((m) => m[1])
      .filter((name) => !(name in values));
    if (unknown.length > 0) {
      problems.addMessage(
        `${policy.source}: unknown placeholder ${unknown.map((n) => `\${${n}}`).join(", ")}; known: \${kvMount}, \${kubernetesAuthPath}`,
      );
      return [];
    }
    return [
      { ...policy, hcl: policy.hcl.replace(/\$\{(\w+)\}/g, (_, name: string) => values[name]) },
    ];
  });
  const known = new Set([
    ...BUILTIN_POLICIES,
    ...(openbaoRaw.ci !== undefined ? [CI_APPLY_POLICY, CI_PREVIEW_POLICY] : []),
    ...policies.map((p) => p.name),
  ]);
  // With the policy folder unreadable the known names are incomplete; naming misses would mislead.
  if (policyDir !== undefined) {
    for (const { names, key } of references) {
      names.forEach((policy, i) => {
        if (!known.has(policy)) {
          problems.add(
            [...key, i],
            `policy ${policy} is neither in the policy folder nor in openbao.policies`,
            { hint: `Known: ${[...known].sort().join(", ")}` },
          );
        }
      });
    }
  }
  const plain = (key: string) => presentKeys.has(key) && !secretKeys.has(key);
  if (
    !secretKeys.has("openbaoToken") &&
    !secretKeys.has("openbaoJwt") &&
    !plain("openbaoToken") &&
    !plain("openbaoJwt")
  ) {
    problems.add(["openbaoToken"], "required (or openbaoJwt in CI), as a secret", {
      hint: "The CLI takes it from OPENBAO_TOKEN, or CI from its OIDC token (docs/app-layer.md)",
    });
  }
  if (secretKeys.has("openbaoJwt") && isMapping(raw.openbao) && raw.openbao.ci === undefined) {
    problems.add(
      ["openbao", "ci"],
      "required to log in with openbaoJwt: it declares the JWT roles CI logs in with",
    );
  }
  if (raw.grafana !== undefined && !secretKeys.has("grafanaAuth") && !plain("grafanaAuth")) {
    problems.add(["grafanaAuth"], "required when grafana is set, as a secret", {
      hint: "A service-account token; the CLI takes it from GRAFANA_AUTH",
    });
  }
  const readDashboards = dashboards.map((files, i) =>
    files.flatMap((file, j) =>
      file === undefined
        ? []
        : readDashboard(file, ["grafana", "folders", i, "dashboards", j], problems),
    ),
  );
  if (
    parsed.success &&
    parsed.data.foundationSource === "published" &&
    !(typeof raw.backend === "string" && raw.backend.startsWith("gs://"))
  ) {
    problems.add(
      ["foundationSource"],
      "published needs talos-platform-app:backend on gs:// (the bucket the foundation publishes its values in)",
    );
  }
  problems.throwIfAny(stackFile);

  const { openbao, grafana, foundationStack, foundationSource } = parsed.data!;
  return {
    foundationStack: foundationStack ?? `organization/talos-platform/${stack}`,
    foundationSource: foundationSource ?? "stackReference",
    openbao: {
      address: openbao.address,
      kubernetesAuthPath: openbao.kubernetesAuthPath ?? DEFAULT_KUBERNETES_AUTH_PATH,
      kvMount: openbao.kvMount ?? DEFAULT_KV_MOUNT,
      policies,
      roles: (openbao.roles ?? []).map((role) => ({
        ...role,
        ttl: role.ttl ?? 3600,
        audience: role.audience ?? "openbao",
      })),
      ci: openbao.ci && {
        ...openbao.ci,
        branch: openbao.ci.branch ?? "main",
        audience: openbao.ci.audience ?? "openbao",
      },
    },
    grafana: grafana && {
      url: grafana.url,
      folders: (grafana.folders ?? []).map((folder, i) => ({
        uid: folder.uid,
        title: folder.title,
        dashboards: readDashboards[i] ?? [],
      })),
      dataSources: (grafana.dataSources ?? []).map((d) => ({
        ...d,
        isDefault: d.isDefault ?? false,
      })),
    },
  };
}
