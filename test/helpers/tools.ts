/**
 * Whether a test may run for want of a tool from outside npm (scripts/test-tools.ts finds and
 * installs them; `npm test` says in one line what is missing). Outside CI a missing tool skips
 * the tests that need it, with the reason and the command that installs it; under CI=true
 * nothing is skipped for a missing tool: the test runs and fails on it.
 */
import { installCommand, TOOLS, type ToolName } from '../../scripts/test-tools.ts';

export const IN_CI = ['true', '1'].includes(process.env['CI'] ?? '');

/** `false` when the tool is there (or in CI), else why the test is skipped. */
export function missingTool(name: ToolName): string | false {
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  if (IN_CI || tool.find() !== undefined) return false;
  return `${tool.label} is not installed (${installCommand(tool)})`;
}

/** Where the tool is; in CI a missing one throws, naming it. */
export function toolPath(name: ToolName): string {
  const tool = TOOLS.find((t) => t.name === name);
  const at = tool?.find();
  if (!tool || !at)
    throw new Error(`${tool?.label ?? name} is not installed: ${tool ? installCommand(tool) : ''}`);
  return at;
}
