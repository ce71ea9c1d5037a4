// The bootstrap layer's stack config: the GCP project, the state bucket and the optional secrets key.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { Problems } from "./problems";
import { getCredential } from "./runSecrets";
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

/** Validates the bootstrap layer's values, reporting every problem at once. */
export function validateBootstrapConfig(
  raw: Record<string, unknown>,
  stackFile: string,
): BootstrapSpec {
  const problems = new Problems();
  const result = bootstrapSchema.safeParse(raw);
  if (!result.success) problems.addZodIssues([], raw, result.error.issues);
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

/** Reads and validates the current bootstrap stack's config, and its one secret. */
export function loadBootstrapConfig(): {
  spec: BootstrapSpec;
  /** A GCP service-account key (JSON), when the CLI found one; else application default credentials. */
  gcpCredentials: pulumi.Output<string> | undefined;
} {
  const config = new pulumi.Config();
  const spec = validateBootstrapConfig(
    {
      gcp: config.getObject<unknown>("gcp"),
      stateBucket: config.getObject<unknown>("stateBucket"),
      ...(config.get("secretsKey") !== undefined
        ? { secretsKey: config.getObject<unknown>("secretsKey") }
        : {}),
      ...(config.get("ciMembers") !== undefined
        ? { ciMembers: config.getObject<unknown>("ciMembers") }
        : {}),
    },
    `bootstrap/Pulumi.${pulumi.getStack()}.yaml`,
  );
  return { spec, gcpCredentials: getCredential(config, "gcpCredentials") };
}
