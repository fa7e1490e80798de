from kafkalog_cli.entry import main

main()
