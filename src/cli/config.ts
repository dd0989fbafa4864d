import * as E from 'fp-ts/Either';
import { loadWebhookFiles } from '../config/webhookFiles';
import { configKey } from '../mapping/keys';
import { operatorStartup, readConfigFile, takeOption, usage, withRedis, type Io, type Outcome } from './common';
import { HELP } from './help';

/** `rest-connector config validate|get|set` (CONTRACT 2): the managed settings, checked and stored. */
export const configCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const sub = args.shift();
  const help = HELP[`config ${sub}`];
  if (help === undefined) return usage(io, `unknown config command '${sub ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  if (sub === 'validate') {
    if (args.length !== 1) return usage(io, 'config validate takes one FILE', help);
    const file = readConfigFile(args[0]!, io);
    if (E.isLeft(file)) return file.left;
    // the files its webhooks name (TLS, OAuth 2.0 secrets), as this machine sees them
    const files = loadWebhookFiles(file.right.settings.webhooks);
    if (E.isLeft(files)) {
      io.err(files.left.join('\n'));
      return { code: 2 };
    }
    io.out(`${args[0]}: valid (${file.right.settings.webhooks.length} webhooks, ${file.right.settings.mappings.length} mappings)`);
    return { code: 0 };
  }
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  if (sub === 'get') {
    if (args.length !== 0) return usage(io, `unexpected argument '${args[0]}'`, help);
    // a misspelt startup parameter stops it as it stops the connectors (CONTRACT 1)
    const startup = operatorStartup();
    if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
    const got = await withRedis((r) => r.get(configKey(id)));
    if (E.isLeft(got)) return { code: 1, message: got.left };
    if (got.right === null) return { code: 1, message: `${configKey(id)} is not set` };
    io.out(got.right);
    return { code: 0 };
  }
  if (args.length !== 1) return usage(io, 'config set takes one FILE', help);
  const file = readConfigFile(args[0]!, io);
  if (E.isLeft(file)) return file.left;
  // Stored as the file's JSON, compacted: unknown fields a newer backend added are kept.
  const stored = JSON.stringify(JSON.parse(file.right.text));
  const set = await withRedis((r) => r.set(configKey(id), stored));
  if (E.isLeft(set)) return { code: 1, message: set.left };
  io.out(`${configKey(id)} written`);
  return { code: 0 };
};
