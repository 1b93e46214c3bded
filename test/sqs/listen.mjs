#!/usr/bin/env node
// Starts fauxqs (a local Amazon SQS, pinned in package.json) on 127.0.0.1
// on a port the kernel picks, and prints "fauxqs listening on port N" once
// it listens: picking a free port first and passing it would leave a moment
// in which another process could take it. buildApp is fauxqs's server
// without its request log (startFauxqs turns it on).
import { buildApp } from 'fauxqs'

const app = buildApp({ logger: false, defaultRegion: 'us-east-1' })
try {
  await app.listen({ port: 0, host: '127.0.0.1' })
} catch (err) {
  console.error('fauxqs: ' + err.message)
  process.exit(1)
}
console.log('fauxqs listening on port ' + app.server.address().port)
