package rabbitmq

// KillConsumerConnection closes the consuming connection without acking or
// nacking anything and without reconnecting, as a crashed process would: the
// broker requeues every delivery it held.
func (b *Broker) KillConsumerConnection() {
	if c := b.consumer(); c != nil {
		c.stopRun()
		<-c.done
	}
}

// Config returns the configuration in force, defaults filled in.
func (b *Broker) Config() Config { return b.cfg }
