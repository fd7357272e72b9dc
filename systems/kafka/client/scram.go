package kafkaclient

import (
	"crypto/sha256"
	"crypto/sha512"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

var (
	sha256Hash scram.HashGeneratorFcn = sha256.New
	sha512Hash scram.HashGeneratorFcn = sha512.New
)

// scramClient adapts xdg-go/scram to sarama's SCRAMClient interface.
type scramClient struct {
	hash         scram.HashGeneratorFcn
	conversation *scram.ClientConversation
}

func newSCRAMClient(hash scram.HashGeneratorFcn) func() sarama.SCRAMClient {
	return func() sarama.SCRAMClient { return &scramClient{hash: hash} }
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conversation = client.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	return c.conversation.Step(challenge)
}

func (c *scramClient) Done() bool { return c.conversation.Done() }
