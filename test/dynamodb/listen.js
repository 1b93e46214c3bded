#!/usr/bin/env node
// Starts dynalite on 127.0.0.1 on a port the kernel picks, and prints
// "dynalite listening on port N" once it listens. dynalite's own cli.js
// takes --port 0 for its default 4567, so a caller that wants a free port
// would have to pick one first, and another process could take it in
// between. Options are dynalite's, as --name value pairs (numbers as
// numbers): listen.js --maxItemSizeKb 1 --createTableMs 0
const dynalite = require('dynalite')

const args = process.argv.slice(2)
const options = {}
for (let i = 0; i < args.length; i += 2) {
  const name = /^--(\w+)$/.exec(args[i])
  if (!name || i + 1 >= args.length) {
    console.error('usage: listen.js [--option value]... (got ' + JSON.stringify(args) + ')')
    process.exit(2)
  }
  const value = args[i + 1]
  options[name[1]] = /^-?\d+$/.test(value) ? Number(value) : value
}

const server = dynalite(options).listen(0, '127.0.0.1', () => {
  console.log('dynalite listening on port ' + server.address().port)
})
server.on('error', (err) => {
  console.error('dynalite: ' + err.message)
  process.exit(1)
})
