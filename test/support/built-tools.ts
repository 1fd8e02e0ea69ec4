import fs from 'node:fs';

/**
 * A tool scripts/stack builds once from its Go module, as scripts/test names it in the
 * environment (HELM, KUBECONFORM, SEAWEEDFS); a test run without it says how to get it.
 */
export function builtTool(
  variable: 'HELM' | 'KUBECONFORM' | 'SEAWEEDFS',
  stackCommand: string,
): string {
  const binary = process.env[variable];
  if (!binary || !fs.existsSync(binary))
    throw new Error(
      `${variable} names no binary: run through scripts/test, or ${variable}=$(scripts/stack ${stackCommand})`,
    );
  return binary;
}
