import { addressFileSetting, healthcheck } from '../healthcheck';
import { VERSION } from '../version';
import { configCommand } from './config';
import { runConnectorCommand } from './connector';
import { deadletterCommand } from './deadletter';
import { usage, type Io, type Outcome } from './common';
import { HELP } from './help';
import { mappingsCommand } from './mappings';
import { webhooksCommand } from './resend';
import { renderCommand } from './render';

/** The command line: one module per command, this the one entry that picks it (`src/cli.ts` runs it). */
export const main = async (argv: string[], io: Io): Promise<Outcome> => {
  const args = [...argv];
  const command = args.shift();
  switch (command) {
    case undefined:
    case '--help':
    case '-h':
      io.out(HELP.main!);
      return { code: command === undefined ? 2 : 0 };
    case '--version':
    case '-v':
      io.out(VERSION);
      return { code: 0 };
    case 'help': {
      // `help`, `help config`, `help config set`: the text --help prints
      const topic = args.filter((a) => a !== '--help' && a !== '-h');
      const text = HELP[topic.length === 0 ? 'main' : topic.join(' ')];
      if (text === undefined) return usage(io, `no help for '${topic.join(' ')}'`, HELP.main!);
      io.out(text);
      return { code: 0 };
    }
    case 'outbound':
    case 'inbound':
      if (args.includes('--help')) {
        io.out(HELP[command]!);
        return { code: 0 };
      }
      if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, HELP[command]!);
      return runConnectorCommand(command);
    case 'config':
    case 'mappings':
    case 'deadletter':
    case 'webhooks':
      // the group alone (a usage error), or with --help: its sub-commands
      if (args.length === 0 || args[0] === '--help' || args[0] === '-h') {
        io.out(HELP[command]!);
        return { code: args.length === 0 ? 2 : 0 };
      }
      return group(command, args, io);
    case 'healthcheck': {
      if (args.includes('--help')) {
        io.out(HELP.healthcheck!);
        return { code: 0 };
      }
      if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, HELP.healthcheck!);
      const result = await healthcheck(addressFileSetting());
      if (result.code !== 0) return result;
      io.out(result.message);
      return { code: 0 };
    }
    default:
      return usage(io, `unknown command '${command}'`, HELP.main!);
  }
};

const group = (command: 'config' | 'mappings' | 'deadletter' | 'webhooks', args: string[], io: Io): Promise<Outcome> | Outcome => {
  switch (command) {
    case 'config':
      return configCommand(args, io);
    case 'mappings':
      return mappingsCommand(args, io);
    case 'deadletter':
      return deadletterCommand(args, io);
    case 'webhooks':
      if (args[0] === 'render') {
        args.shift();
        if (args.includes('--help')) {
          io.out(HELP['webhooks render']!);
          return { code: 0 };
        }
        return renderCommand(args, io, HELP['webhooks render']!, (b) => process.stdout.write(b));
      }
      return webhooksCommand(args, io);
  }
};
