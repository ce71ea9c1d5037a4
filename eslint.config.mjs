// Lint rules that catch Pulumi-specific and async mistakes; formatting is Prettier's job.
import pulumi from "@pulumi/eslint-plugin";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", "**/dist/**", ".ci/**", "**/*.js", "**/*.mjs"] },
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@pulumi": pulumi },
    rules: {
      "@pulumi/no-output-in-template-literal": "error",
      "@pulumi/no-output-instance-in-template-literal": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
);
