from registry.search.tokenize import STOP_WORDS, Tokenizer, split_identifier, tokenize


def test_camel_case_and_acronyms_split_into_words():
    assert split_identifier("getWeatherForecast") == ["get", "Weather", "Forecast"]
    assert split_identifier("HTTPServer2") == ["HTTP", "Server", "2"]
    assert tokenize("getWeatherForecast") == ["get", "weather", "forecast", "getweatherforecast"]


def test_snake_kebab_dotted_and_slashed_names_split():
    assert tokenize("list_open_issues") == ["list", "open", "issu"]
    assert tokenize("create-pull-request") == ["creat", "pull", "request"]
    assert tokenize("calendar.respondToEvent") == ["calendar", "respond", "event", "respondtoev"]
    assert tokenize("/v1/nutrition") == ["1", "v1", "nutrit"]  # "v" alone is too short


def test_letters_and_digits_are_split_and_kept_whole():
    assert tokenize("mp3") == ["mp", "3", "mp3"]
    assert tokenize("base64Encode") == ["base", "64", "encod", "base64encod"]
    assert tokenize("2024") == ["2024"]


def test_stemming_joins_inflections():
    assert tokenize("recipes") == tokenize("recipe") == ["recip"]
    assert tokenize("searching") == tokenize("searches") == ["search"]


def test_stop_words_and_single_letters_are_dropped():
    assert "the" in STOP_WORDS
    assert tokenize("I want to find the weather of a city") == ["find", "weather", "citi"]
    assert tokenize("the and of") == []
    assert tokenize("") == []


def test_unicode_letters_case_folding_and_nfkc():
    assert tokenize("Café") == tokenize("café") == ["café"]
    assert tokenize("Straße") == tokenize("STRASSE")
    assert tokenize("ＷＥＡＴＨＥＲ") == ["weather"]  # full-width letters fold to ASCII


def test_chinese_is_cut_into_character_bigrams():
    assert tokenize("搜索结果") == ["搜索", "索结", "结果"]
    assert tokenize("必应") == ["必应"]
    # Mixed scripts keep both parts.
    assert tokenize("bing搜索") == ["bing", "搜索"]


def test_jieba_mode_segments_words():
    toks = Tokenizer(cjk="jieba")("返回搜索结果")
    assert "搜索" in toks and "结果" in toks


def test_tokenizer_without_stemming_or_stop_words():
    t = Tokenizer(stem=False, stop_words=(), keep_compound=False)
    assert t("The Recipes") == ["the", "recipes"]
