"""What comes from outside: data coming in from the outside world and going out to it, with the credentials kept out.

``chat_endpoint`` (rollouts from an OpenAI-compatible endpoint), ``dotenv`` (where an API key may
live), ``redaction`` (a key never printed or written), ``dataset_readers`` (outside question/answer
data), ``rollout_readers`` (outside model outputs) and ``messages`` (a chat message's text, read the
same way here and by the bridges of ``course/integrations``, which outside frameworks call).
"""
