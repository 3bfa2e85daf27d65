// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "./scripts/globals.mjs";

export default tseslint.config(
  { ignores: ["out/**", "node_modules/**", ".vscode-test/**", "*.vsix"] },
  js.configs.recommended,
  {
    files: ["src/**/*.ts", "test/**/*.ts"],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-unnecessary-condition": "off",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // vscode.d.ts declares Disposable/EventEmitter as classes; their instances from the API are fine
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
    },
  },
  {
    // node:test's test() returns a promise the runner awaits
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-floating-promises": "off" },
  },
  {
    files: ["e2e/**/*.mjs", "scripts/**/*.mjs", "eslint.config.mjs"],
    languageOptions: { globals: globals.node, sourceType: "module" },
  },
);
