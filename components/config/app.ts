// The app layer's stack config: where the foundation's outputs come from, OpenBao's policies, auth and
// mounts, Grafana's folders, data sources and dashboards. Policy and dashboard files are read here, so
// a bad or missing file is reported with every other problem, before anything is created.
import * as pulumi from "@pulumi/pulumi";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { REPO_ROOT } from "../repoRoot";
import { Problems } from "./problems";

/** The app project's folder (policy and dashboard paths are relative to it). */
export const APP_DIR = path.join(REPO_ROOT, "app");

const name = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
  error: "expected a lowercase name (letters, digits, - and _)",
});
const duration = z.int().positive();

const appSchema = z.strictObject({
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
    /** @default "kubernetes" */
    kubernetesAuthPath: name.optional(),
    /** KV version 2 mount. @default "secret" */
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

/** A sanity check of a policy's HCL: one `path "…" { … }` block at least, braces balanced. */
export function policyProblem(hcl: string): string | undefined {
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

/** Validates the app layer's values and reads its files, reporting every problem at once. */
export function validateAppConfig(
  raw: Record<string, unknown>,
  stack: string,
  secretKeys: ReadonlySet<string>,
): AppSpec {
  const stackFile = `app/Pulumi.${stack}.yaml`;
  const problems = new Problems();
  const parsed = appSchema.safeParse(raw);
  if (!parsed.success) {
    problems.addZodIssues([], raw, parsed.error.issues);
    problems.throwIfAny(stackFile);
  }
  const { openbao, grafana, foundationStack } = parsed.data!;

  const fromFiles = readPolicies(openbao.policyDir ?? "policies", problems);
  const inline = Object.entries(openbao.policies ?? {}).flatMap(([policyName, hcl]) => {
    const problem = policyProblem(hcl);
    if (problem) problems.add(["openbao", "policies", policyName], problem);
    return problem ? [] : [{ name: policyName, hcl, source: `openbao.policies.${policyName}` }];
  });
  const policies = [...fromFiles, ...inline];
  const known = new Set([...BUILTIN_POLICIES, ...policies.map((p) => p.name)]);
  const checkPolicies = (names: string[], key: (string | number)[]) =>
    names.forEach((policy, i) => {
      if (!known.has(policy)) {
        problems.add(
          [...key, i],
          `policy ${policy} is neither in the policy folder nor in openbao.policies`,
          {
            hint: `Known: ${[...known].sort().join(", ")}`,
          },
        );
      }
    });
  openbao.roles?.forEach((role, i) =>
    checkPolicies(role.policies, ["openbao", "roles", i, "policies"]),
  );
  if (openbao.ci) {
    checkPolicies(openbao.ci.previewPolicies, ["openbao", "ci", "previewPolicies"]);
    checkPolicies(openbao.ci.applyPolicies, ["openbao", "ci", "applyPolicies"]);
  }
  if (!secretKeys.has("openbaoToken") && !secretKeys.has("openbaoJwt")) {
    problems.add(["openbaoToken"], "required (or openbaoJwt in CI), as a secret", {
      hint: "The CLI takes it from OPENBAO_TOKEN, or CI from its OIDC token (README: App layer)",
    });
  }
  if (secretKeys.has("openbaoJwt") && !openbao.ci) {
    problems.add(
      ["openbao", "ci"],
      "required to log in with openbaoJwt: it declares the JWT roles CI logs in with",
    );
  }
  if (grafana && !secretKeys.has("grafanaAuth")) {
    problems.add(["grafanaAuth"], "required when grafana is set, as a secret", {
      hint: "A service-account token; the CLI takes it from GRAFANA_AUTH",
    });
  }
  const folders = (grafana?.folders ?? []).map((folder, i) => ({
    uid: folder.uid,
    title: folder.title,
    dashboards: (folder.dashboards ?? []).flatMap((file, j) =>
      readDashboard(file, ["grafana", "folders", i, "dashboards", j], problems),
    ),
  }));
  problems.throwIfAny(stackFile);

  return {
    foundationStack: foundationStack ?? `organization/talos-platform/${stack}`,
    openbao: {
      address: openbao.address,
      kubernetesAuthPath: openbao.kubernetesAuthPath ?? "kubernetes",
      kvMount: openbao.kvMount ?? "secret",
      policies,
      roles: (openbao.roles ?? []).map((role) => ({ ...role, ttl: role.ttl ?? 3600 })),
      ci: openbao.ci && {
        ...openbao.ci,
        branch: openbao.ci.branch ?? "main",
        audience: openbao.ci.audience ?? "openbao",
      },
    },
    grafana: grafana && {
      url: grafana.url,
      folders,
      dataSources: (grafana.dataSources ?? []).map((d) => ({
        ...d,
        isDefault: d.isDefault ?? false,
      })),
    },
  };
}

/** The secret keys the app layer reads (the CLI resolves the same ones). */
export const APP_SECRET_KEYS = ["openbaoToken", "openbaoJwt", "grafanaAuth"] as const;

/** Reads and validates the current app stack's config and files. */
export function loadAppConfig(): { spec: AppSpec; secrets: AppSecrets } {
  const config = new pulumi.Config();
  const all = pulumi.runtime.allConfig();
  const present = new Set(APP_SECRET_KEYS.filter((key) => `${pulumi.getProject()}:${key}` in all));
  const raw: Record<string, unknown> = {};
  for (const key of ["foundationStack", "openbao", "grafana"]) {
    if (config.get(key) !== undefined)
      raw[key] = key === "foundationStack" ? config.get(key) : config.getObject<unknown>(key);
  }
  const spec = validateAppConfig(raw, pulumi.getStack(), present);
  return {
    spec,
    secrets: {
      openbaoToken: config.getSecret("openbaoToken"),
      openbaoJwt: config.getSecret("openbaoJwt"),
      // Only the main branch may apply; GitHub Actions sets GITHUB_REF for every job.
      openbaoJwtRole:
        process.env.GITHUB_REF === `refs/heads/${spec.openbao.ci?.branch ?? "main"}`
          ? "ci-apply"
          : "ci-preview",
      grafanaAuth: config.getSecret("grafanaAuth"),
    },
  };
}
