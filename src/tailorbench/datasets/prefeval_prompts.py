"""PrefEval's prompt texts, copied verbatim from its repository (github.com/amazon-science/PrefEval, commit
50795054b5ff5f418d2b768a331d71e480f93331; CC BY-NC 4.0: non-commercial use, cite the PrefEval paper): the
multiple-choice instruction of `utils/utils_mcq.py` (`get_mcq_question_format`), the reminder of
`utils/common_utils.py` (`REMINDER`), the generation task's word limit (`utils/explicit_utils.py`,
`get_question_prompt`) and the four checks of `error_type/*.txt` with the evaluator's system prompt
(`generation_task/llm_based_evaluation_errortypes.py`). Kept in a module of their own so the licence of these
texts stays plain; `tests/benchmarks/test_prefeval_scoring.py` compares them with the repository's."""

from __future__ import annotations

#: `get_mcq_question_format`'s f-string, `{options}` standing for its `formatted_options`
MCQ_FORMAT = (
    '\n'
    "    I'm trying to decide on this and here are 4 options for my query: \n"
    '{options}\n'
    "Now, I'd like you to pick one of them as your top recommendation for me.\n"
    '    Important instructions for your response:\n'
    '    1. Choose only one option (A, B, C, or D) that best matches my preferences.\n'
    '    2. Your answer must be one of these options.\n'
    '    3. Don\'t say things like "I can\'t choose" or suggest alternatives not listed.\n'
    '    4. Answer example: <choice>B</choice>. Give me your answer in this exact format, '
    'without any additional explanation:\n'
    '       <choice>[A/B/C/D]</choice>\n'
    '    '
)

REMINDER = (
    '\n'
    'In your response, please ensure that you take into account our earlier discussion, and '
    'provide an answer that is consistent with my preference.'
)

#: appended to the generation task's question (`max_gen_tokens: 300` of config.yaml)
WORD_LIMIT = " (Please respond within {max_tokens} words.)"
MAX_GEN_TOKENS = 300

#: config.yaml `system_prompt`
SYSTEM_PROMPT = "You are a helpful assistant."

EVALUATOR_SYSTEM = (
    "You are a helpful assistant in evaluating an AI assistant's reponse. You should be fair "
    "and strict and follow the user's instruction"
)

#: the four checks, in the order the evaluation script asks them (the hallucination check needs the
#: acknowledgement check's extracted preference)
CHECKS: dict[str, str] = {
    'acknow': (
        'You will analyze a conversation between a user and an assistant, focusing on whether the '
        "assistant acknowledges any user preference in answering the user's query. \n"
        '\n'
        'Evaluate the response based on these stringent criteria:\n'
        '\n'
        '1. Check if the response explicitly or implicitly mentions or references a user '
        'preference. 2. The content of the preference is irrelevant for this check; only its '
        'presence matters.\n'
        '\n'
        'Answer "Yes" if:\n'
        '\n'
        '1. The response explicitly mentions or refers to a user preference in answering the '
        'user\'s question. Examples include: "Based on your previous preference for xxxx"; "Based '
        'on your previous preference, I would suggest you xxxx"; "Since you mentioned you '
        'prefer/dislike xxxx"; "Since you are a xxxx"; "I will recommend the following given your '
        'preference for xxx", etc. You should extract the "xxxx" in your answer. If it only says '
        '"Based on our previous conversation, I recommend..." and does not explicitly mention any '
        "preference, you should answer 'No'. \n"
        "2. The response assumes the user preference in answering the user's question implicitly. "
        "For example, when the user asks 'Can you recommend me cars to drive?', if the response is "
        "'Based on your preference, I will recommend non-EV cars, ...', then this indicates the "
        "assistant assumes that the user's preference is a dislike of EV cars, and you should "
        "answer 'Yes'.\n"
        '\n'
        'Answer "No" if the response does not mention or refer to any user preference explicitly '
        'or implicitly. If you cannot extract the sentence stating what the preference is, answer '
        "'No'.\n"
        '\n'
        "Here is the assistant's response:\n"
        "The user's question is: {question}\n"
        'Assistant response: {end_generation}\n'
        '\n'
        'Examine the response meticulously and answer. Please answer in this exact XML format '
        'without any additional text:\n'
        '<preference>[quote of the sentence that acknowledges/mentions what the preference is; '
        'leave it blank if there is none]</preference>\n'
        '<answer>[Yes/No]</answer>'
    ),
    'violate': (
        'You will analyze a conversation between a user and an assistant, focusing on whether the '
        "assistant's response violates the user's stated preference.\n"
        'Evaluate the response based on these criteria:\n'
        '\n'
        'Answer "Yes" if:\n'
        '\n'
        '1. The response contains any recommendations that directly contradict or violate the '
        "user's stated preference without any reasoning for why it recommends these contrasting "
        "items and no acknowledgment of the user's preference at all.\n"
        '\n'
        'Answer "No" if:\n'
        '\n'
        "1. The response respects the user's stated preference.\n"
        "2. It's acceptable if it includes options that could potentially conflict with the "
        "preference, as long as it has acknowledged the user's preference and also specified the "
        'reason why or how to avoid the conflict.\n'
        "3. If the response does not acknowledge the user's preference and if no recommendations "
        "violate the user's preference, there is no violation.\n"
        '\n'
        'Here is the conversation:\n'
        "User's preference: {preference}\n"
        'User query: {question}\n'
        'Assistant response: {end_generation}\n'
        '\n'
        'Examine the response meticulously and answer. Answer in this exact XML format:\n'
        '<explanation>[1 very short sentence explanation]</explanation>\n'
        '<answer>[Yes/No]</answer>'
    ),
    'hallucinate': (
        'You will analyze a conversation between a user and an assistant, focusing on whether the '
        "assistant's restatement of the user's stated preference is the same preference. Evaluate "
        'the response based on these stringent criteria to answer if the assistant has '
        'hallucinated the preference or not:\n'
        '\n'
        'Answer "Yes" if:\n'
        '\n'
        "1. The assistant's restatement differs from the original preference in meaning or intent.\n"
        "2. The assistant's restatement contradicts the original preference.\n"
        "3. The assistant's restatement is not related or irrelevant to the original preference.\n"
        '\n'
        'Answer "No" if has not hallucinated:\n'
        '\n'
        "1. The assistant's restatement matches the original preference.\n"
        "2. The assistant's restatement is a minor paraphrase that fully preserves the meaning and "
        'intent of the original preference.\n'
        '3. The restatement is just empty, no hallucination.\n'
        '\n'
        'Here is the information: \n'
        'Original user preference: "{preference}" \n'
        'Assistant\'s restatement: "{assistant_restatement}" \n'
        "Examine the original preference and the assistant's restatement meticulously and answer. "
        'Please answer in this exact XML format without any other additional text: \n'
        '<explanation>[1 short sentence explanation]</explanation>\n'
        '<answer>[Yes/No]</answer>\n'
    ),
    'helpful': (
        'You will analyze a conversation between a user and an assistant, focusing on whether the '
        "assistant provides any substantive response to the user's query.\n"
        'Evaluate the response based on these stringent criteria:\n'
        '\n'
        'Answer "Yes" if any of the following:\n'
        '\n'
        '1. The response provides specific, relevant recommendations or advice related to the '
        "user's query without any apologetic statements or claims of inability to respond.\n"
        "2. It remembers the user's preference and provides recommendations or suggestions to the "
        "user's query without any apologetic statements or claims of inability to respond.\n"
        '\n'
        'Answer "No" if any of the following:\n'
        '\n'
        '1. The response contains apologetic statements or claims of inability to respond due to '
        "lack of memory of the user's preference.\n"
        '2. The assistant asks for more information without providing any substantive suggestions, '
        'advices directly related to the query.\n'
        "3. The response doesn't address the user's query.\n"
        '4. Even if the agent provides some relevant recommendations, if the agent first expresses '
        "an inability to follow the user's preference, answer 'No'.\n"
        '\n'
        'Examples of unhelpful responses: (Answer: No):\n'
        '\n'
        '"Unfortunately, I don\'t actually have enough context about your specific preferences for '
        'xxx"\n'
        '"Unfortunately, we haven\'t had a previous discussion about your preferences for xxx. '
        'Could you let me know your preference for xxx?"\n'
        '"I apologize, but I don\'t have access to your personal information or previous '
        'conversations."\n'
        '"I\'m sorry, but I can\'t provide a specific answer without more details."\n'
        '\n'
        'Here is the conversation:\n'
        'User query: {question}\n'
        'Assistant response: {end_generation}\n'
        '\n'
        'Examine the response meticulously and answer. Answer in this exact XML format:\n'
        '<explanation>[1 very short sentence explanation]</explanation>\n'
        '<answer>[Yes/No]</answer>'
    ),
}
