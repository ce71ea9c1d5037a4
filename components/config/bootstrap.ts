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
  secretsKey: z
    .strictObject({ keyRing: kmsName, cryptoKey: kmsName, location: z.string().min(1).optional() })
    .optional(),
  /** CI's principals: object admin on the bucket, encrypter/decrypter on the secrets key. */
  ciMembers: z
    .array(
      z.string().regex(/^(serviceAccount|user|group|principal|principalSet):\S+$/, {
        error:
          "expected an IAM principal, e.g. serviceAccount:ci@<project>.iam.gserviceaccount.com",
      }),
    )
    .optional(),
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
  readonly ciMembers: readonly string[];
}

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
      ["gcp", "stateBucket", "secretsKey", "ciMembers"].includes(key),
    ),
  );
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
  problems.throwIfAny(stackFile);
  const { gcp, stateBucket, secretsKey, ciMembers } = result.data!;
  return {
    gcp,
    stateBucket: {
      name: stateBucket.name,
      location: stateBucket.location ?? "EU",
      keepVersions: stateBucket.keepVersions ?? 20,
    },
    secretsKey: secretsKey && { ...secretsKey, location: secretsKey.location ?? gcp.region },
    ciMembers: ciMembers ?? [],
  };
}
