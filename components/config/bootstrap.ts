// The bootstrap layer's stack config: the GCP project, the state bucket and the optional secrets key;
// every check of the bootstrap's stack file is here.
import { z } from "zod";
import { checkPlainTextCredentials } from "./rules/credentials";
import { checkTopLevelKeys } from "./rules/keys";
import { CLI_KEYS } from "./keys";
import { PARSE_OPTIONS } from "./messages";
import { once, Problems, propertyNames } from "./problems";
import { gcpSchema } from "./schema";

const kmsName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,63}$/, { error: "expected letters, digits, - and _" });

/** An environment name usable in KMS key and service names (`foundation-<env>`, `preview-<env>`). */
const environmentName = z.string().regex(/^[a-z][a-z0-9-]{0,15}$/, {
  error:
    "expected an environment name: a lowercase letter, then up to 15 lowercase letters, digits or -",
});

/** GitHub's numeric ids (the OIDC token's `repository_id`, `repository_owner_id` claims). */
const githubId = z.string().regex(/^[0-9]{1,20}$/, {
  error:
    'expected the numeric id as a string, e.g. "123456789" (gh api repos/<owner>/<name> --jq .id, .owner.id)',
});

const bootstrapSchema = z.strictObject({
  gcp: gcpSchema,
  stateBucket: z.strictObject({
    /** Globally unique: 3-63 lowercase letters, digits, dashes. */
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/, {
      error: "expected a bucket name (3-63 lowercase letters, digits and dashes)",
    }),
    /** @default "EU" */
    location: z.string().min(1).optional(),
    /** @default 20 */
    keepVersions: z.int().min(1).optional(),
  }),
  /** Legacy: the one key every stack shared. No CI identity is granted it (docs/credentials.md). */
  secretsKey: z
    .strictObject({ keyRing: kmsName, cryptoKey: kmsName, location: z.string().min(1).optional() })
    .optional(),
  /** One key per (layer, environment): `<layer>-<environment>` in the key ring. */
  secretsKeys: z
    .strictObject({
      keyRing: kmsName,
      location: z.string().min(1).optional(),
      environments: z
        .array(environmentName)
        .min(1)
        .refine((envs) => new Set(envs).size === envs.length, { error: "duplicate environment" }),
    })
    .optional(),
  /** CI's identities, through Workload Identity Federation with GitHub's OIDC tokens. */
  ci: z
    .strictObject({
      repository: z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, {
        error: "expected owner/name of the GitHub repository",
      }),
      repositoryId: githubId,
      repositoryOwnerId: githubId,
      /** @default false */
      drift: z.boolean().optional(),
    })
    .optional(),
  /** Refused (checked before the schema): kept here only so "did you mean" knows the key. */
  ciMembers: z.unknown().optional(),
});

/** The bootstrap layer's validated settings. */
export interface BootstrapSpec {
  readonly gcp: { readonly project: string; readonly region: string };
  readonly stateBucket: {
    readonly name: string;
    readonly location: string;
    readonly keepVersions: number;
  };
  readonly secretsKey?: {
    readonly keyRing: string;
    readonly cryptoKey: string;
    readonly location: string;
  };
  readonly secretsKeys?: {
    readonly keyRing: string;
    readonly location: string;
    readonly environments: readonly string[];
  };
  readonly ci?: {
    readonly repository: string;
    readonly repositoryId: string;
    readonly repositoryOwnerId: string;
    readonly drift: boolean;
  };
}

/** Why `ciMembers` is refused, and what replaces it. */
export const CI_MEMBERS_REFUSED =
  "refused: it gave CI object admin on the whole state bucket and encrypter/decrypter on the one key " +
  "of every stack, prod's foundation (Talos machine secrets, kubeconfig) included. Remove it; set " +
  "talos-platform-bootstrap:secretsKeys (a key per layer and environment) and talos-platform-bootstrap:ci " +
  "(read-only preview and app-only apply identities through Workload Identity Federation, no key files; " +
  "docs/credentials.md, docs/first-time.md)";

/** Every key the bootstrap layer's sections know, for "did you mean". */
const bootstrapSettingKeys = once(() => [
  ...propertyNames(z.toJSONSchema(bootstrapSchema, { unrepresentable: "any" })),
]);

/** The bootstrap project's name, the namespace of its keys. */
const BOOTSTRAP_PROJECT = "talos-platform-bootstrap";

/** The secret keys the bootstrap program reads (the CLI resolves the same ones). */
export const BOOTSTRAP_SECRET_KEYS = ["gcpCredentials"] as const;

/** Every key the bootstrap layer's namespace may hold. */
const BOOTSTRAP_KEYS: readonly string[] = [
  "gcp",
  "stateBucket",
  "secretsKey",
  "secretsKeys",
  "ci",
  "ciMembers",
  ...BOOTSTRAP_SECRET_KEYS,
  ...CLI_KEYS,
];

/**
 * Validates the bootstrap layer's values, reporting every problem at once. Pure over `raw` (the
 * namespace's keys that are not secret) and `secretKeys` (the keys set as secrets).
 */
export function validateBootstrapConfig(
  raw: Record<string, unknown>,
  stackFile: string,
  secretKeys: ReadonlySet<string> = new Set(),
  project = BOOTSTRAP_PROJECT,
): BootstrapSpec {
  const problems = new Problems();
  const presentKeys = new Set([...Object.keys(raw), ...secretKeys]);
  checkTopLevelKeys(project, presentKeys, BOOTSTRAP_KEYS, problems);
  checkPlainTextCredentials(BOOTSTRAP_SECRET_KEYS, presentKeys, secretKeys, stackFile, problems);
  const settings = Object.fromEntries(
    Object.entries(raw).filter(([key]) =>
      ["gcp", "stateBucket", "secretsKey", "secretsKeys", "ci"].includes(key),
    ),
  );
  if (raw.ciMembers !== undefined) problems.add(["ciMembers"], CI_MEMBERS_REFUSED);
  const result = bootstrapSchema.safeParse(settings, PARSE_OPTIONS);
  if (!result.success) {
    problems.addZodIssues(
      [],
      settings,
      result.error.issues,
      bootstrapSettingKeys(),
      "docs/first-time.md",
    );
  }
  if (result.success && result.data.ci && !result.data.secretsKeys) {
    problems.add(
      ["ci"],
      "needs talos-platform-bootstrap:secretsKeys: each CI identity may use its own environment's app key only",
    );
  }
  problems.throwIfAny(stackFile);
  const { gcp, stateBucket, secretsKey, secretsKeys, ci } = result.data!;
  return {
    gcp,
    stateBucket: {
      name: stateBucket.name,
      location: stateBucket.location ?? "EU",
      keepVersions: stateBucket.keepVersions ?? 20,
    },
    secretsKey: secretsKey && { ...secretsKey, location: secretsKey.location ?? gcp.region },
    ...(secretsKeys && {
      secretsKeys: { ...secretsKeys, location: secretsKeys.location ?? gcp.region },
    }),
    ...(ci && { ci: { ...ci, drift: ci.drift ?? false } }),
  };
}
