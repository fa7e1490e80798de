from kafkalog_cli.app import main

main()
